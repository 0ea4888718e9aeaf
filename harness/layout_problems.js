// Evaluated in the page by harness.browser.AppPage.layout_problems: see the comment on LAYOUT_PROBLEMS there.
() => {
  const problems = [];
  const TOLERANCE = 2;
  const corners = (node) => {
    const box = node.getBBox(), m = node.getScreenCTM();
    return [[box.x, box.y], [box.x + box.width, box.y], [box.x + box.width, box.y + box.height], [box.x, box.y + box.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const rectangle = (box) => [[box.left, box.top], [box.right, box.top], [box.right, box.bottom], [box.left, box.bottom]];
  const apart = (p, q) => {  // separating axis test for two convex quadrilaterals
    for (const polygon of [p, q]) {
      for (let i = 0; i < polygon.length; i++) {
        const [x1, y1] = polygon[i], [x2, y2] = polygon[(i + 1) % polygon.length];
        const length = Math.hypot(x2 - x1, y2 - y1) || 1, nx = (y2 - y1) / length, ny = (x1 - x2) / length;
        const a = p.map(([x, y]) => x * nx + y * ny), b = q.map(([x, y]) => x * nx + y * ny);
        if (Math.max(...a) - Math.min(...b) < TOLERANCE || Math.max(...b) - Math.min(...a) < TOLERANCE) return true;
      }
    }
    return false;
  };
  const charts = [...document.querySelectorAll('.js-plotly-plot')];
  charts.forEach((plot, index) => {
    const frame = plot.getBoundingClientRect();
    if (frame.width < 1) return;
    const title = ((plot.layout && plot.layout.title && plot.layout.title.text) || `chart ${index}`).replace(/<[^>]+>/g, '');
    // Every subplot has its own axis classes (xtick, x2tick, g-xtitle, g-x2title ...).
    const selectors = ['.gtitle', '.gtitle-subtitle', '[class^="g-x"][class$="title"] text', '[class^="g-y"][class$="title"] text',
                       '.xaxislayer-above text', '.yaxislayer-above text', '.annotation-text', '.legendtext',
                       '.cbtitle text', '.cbaxis text'];
    const labels = [];
    for (const selector of selectors) {
      for (const node of plot.querySelectorAll(selector)) {
        const text = (node.textContent || '').trim();
        const box = node.getBoundingClientRect();
        if (!text || box.width < 0.5 || box.height < 0.5 || getComputedStyle(node).opacity === '0') continue;
        labels.push({text, shape: corners(node), kind: selector});
      }
    }
    const areas = [...plot.querySelectorAll('.nsewdrag')].map(node => node.getBoundingClientRect())
      .filter(box => box.width > 0.5 && box.height > 0.5).map(rectangle);
    for (const label of labels) {
      const xs = label.shape.map(point => point[0]), ys = label.shape.map(point => point[1]);
      if (Math.min(...xs) < frame.left - 1 || Math.max(...xs) > frame.right + 1
          || Math.min(...ys) < frame.top - 1 || Math.max(...ys) > frame.bottom + 1) {
        problems.push(`${title}: "${label.text}" (${label.kind}) is cut off by the chart's edge`);
      }
      if (label.kind !== '.annotation-text' && areas.some(area => !apart(area, label.shape))) {
        problems.push(`${title}: "${label.text}" (${label.kind}) is drawn over a plot`);
      }
    }
    // The chart's toolbar shows while the pointer is on the chart (on a phone: after a tap, and it stays), so it
    // is measured where it would show even while it is hidden.
    const toolbar = plot.querySelector('.modebar');
    const bar = toolbar && getComputedStyle(toolbar).display !== 'none' ? toolbar.getBoundingClientRect() : null;
    if (bar && bar.width > 0.5 && bar.height > 0.5) {
      for (const label of labels) {
        if (!apart(rectangle(bar), label.shape)) {
          problems.push(`${title}: the chart's toolbar sits on "${label.text}" (${label.kind})`);
        }
      }
    }
    // Streamlit gives each chart a box of the chart's height; a chart or toolbar drawn past it is cut off there,
    // or runs into what follows.
    const element = plot.closest('[data-testid="stElementContainer"]');
    const inside = (box, outer) => box.top >= outer.top - 1 && box.bottom <= outer.bottom + 1
      && box.left >= outer.left - 1 && box.right <= outer.right + 1;
    if (element && !inside(frame, element.getBoundingClientRect())) {
      problems.push(`${title}: the chart runs past the box Streamlit gives it`);
    }
    if (element && bar && bar.width > 0.5 && !inside(bar, element.getBoundingClientRect())) {
      problems.push(`${title}: the chart's toolbar runs past the box Streamlit gives the chart`);
    }
    for (let box = toolbar && toolbar.parentElement; bar && box && box !== element; box = box.parentElement) {
      const style = getComputedStyle(box);
      if ((style.overflowX !== 'visible' || style.overflowY !== 'visible') && !inside(bar, box.getBoundingClientRect())) {
        problems.push(`${title}: the chart's toolbar is hidden by a box that cuts off what it does not hold`);
        break;
      }
    }
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++) {
        if (!apart(labels[i].shape, labels[j].shape)) {
          problems.push(`${title}: "${labels[i].text}" (${labels[i].kind}) overlaps "${labels[j].text}" (${labels[j].kind})`);
        }
      }
    }
    // What a heatmap writes in its cells (numbers, ✓ and ✗, −∞, a strip's letters) where it shows: no two stand on
    // each other. Boxes are upright here, so they are compared as rectangles, sorted from the left. A text's box is
    // as wide as its letters (half a pixel is let pass) but a line taller than they are (2 px are let pass).
    const cells = [...plot.querySelectorAll('.heatmaplayer text')]
      .filter(node => (node.textContent || '').trim() && getComputedStyle(node).display !== 'none')
      .map(node => ({text: node.textContent.trim(), box: node.getBoundingClientRect()}))
      .filter(cell => cell.box.width > 0.5 && cell.box.height > 0.5)
      .sort((a, b) => a.box.left - b.box.left);
    let crowded = 0, example = '';
    for (let i = 0; i < cells.length; i++) {
      const a = cells[i].box;
      for (let j = i + 1; j < cells.length && cells[j].box.left < a.right - 0.5; j++) {
        const b = cells[j].box;
        if (b.top < a.bottom - TOLERANCE && a.top < b.bottom - TOLERANCE) {
          crowded += 1;
          example = example || `"${cells[i].text}" and "${cells[j].text}"`;
        }
      }
    }
    if (crowded) {
      problems.push(`${title}: ${crowded} pairs of what its cells write stand on each other (${example} first)`);
    }
  });
  for (const node of document.querySelectorAll('.stMarkdownEllipsis, [data-testid="stMetricValue"] > div, [data-testid="stTab"] p')) {
    if (node.scrollWidth > node.clientWidth + 1 && node.getBoundingClientRect().width > 0) {
      problems.push(`the label "${node.textContent.trim()}" is cut off (${node.clientWidth} of ${node.scrollWidth} px shown)`);
    }
  }
  for (const node of document.querySelectorAll('.katex-display')) {  // KaTeX's last glyph may overhang 2 px
    if (node.scrollWidth > node.clientWidth + TOLERANCE && node.getBoundingClientRect().width > 0) {
      const formula = node.querySelector('annotation')?.textContent.trim().slice(0, 60) ?? '';
      problems.push(`the formula "${formula}" is wider than its box (${node.clientWidth} of ${node.scrollWidth} px shown)`);
    }
  }
  const main = document.querySelector('[data-testid="stMain"]');
  if (main && main.scrollWidth > main.clientWidth + 1) {
    problems.push(`the page scrolls sideways (${main.scrollWidth} px of content in a ${main.clientWidth} px window)`);
  }
  return [...new Set(problems)];
}
