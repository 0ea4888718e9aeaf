from lessons.common import next_token_figures as figures


def test_candidates_figure_lists_the_tokens_in_rank_order_and_darkens_only_the_chosen_one():
    figure = figures.candidates_figure(["b", "a", "<d>"], [0.9, 0.07, 0.01], "step 3")
    (bars,) = figure.data
    assert list(bars.y) == ["1. b", "2. a", "3. &lt;d&gt;"]
    assert list(bars.x) == [0.9, 0.07, 0.01]
    assert list(bars.marker.color) == [
        figures.CHOSEN_COLOUR,
        figures.OTHER_COLOUR,
        figures.OTHER_COLOUR,
    ]
    assert list(bars.text) == ["0.9", "0.07", "0.01"]
    unchosen = figures.candidates_figure(["x", "y"], [0.6, 0.4], chosen=None).data[0]
    assert list(unchosen.marker.color) == [figures.OTHER_COLOUR] * 2
