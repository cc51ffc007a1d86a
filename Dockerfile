# labrxiv: one image for every process of the stack (compose/docker-compose.yml).
#
# Every process runs as the unprivileged user `labrxiv`. The steps workers run lab code
# in the rootless sandbox (workers/sandbox/backends/userns.py: unshare into a user
# namespace, mount, pivot_root), which needs no root, only a container that lets a user
# make namespaces (compose gives `steps` the security options; docs/deploy.md says why).
# BASE: another image with Python 3.11 where `python` and `pip` are on PATH, for a machine
# that cannot pull python:3.11-slim (compose/offline/ builds one from Debian's packages).
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LABRXIV_DATA_DIR=/data

# util-linux: unshare, setpriv and pivot_root, the sandbox's tools (the slim image has
# them today; named here so that stays true).
RUN apt-get update \
    && apt-get install -y --no-install-recommends util-linux \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 labrxiv \
    && useradd --system --uid 10001 --gid labrxiv --home-dir /app --no-create-home \
       --shell /usr/sbin/nologin labrxiv

WORKDIR /app

# The dependencies first, from pyproject.toml and the lock alone, so a change of labrxiv's
# code does not reinstall them: pyproject.toml's runtime ranges (not the dev tools), at
# the exact versions of requirements.lock.
COPY pyproject.toml requirements.lock ./
RUN pip install pip==25.3 \
    && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -c requirements.lock -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY . .
# Editable, as `make demo` installs it: the built-in task bundles are found in gym/
# beside the `workers` package (workers/gym/registry.py), which a plain install into
# site-packages would leave behind.
RUN pip install --no-deps -e . \
    && python -m compileall -q events runstate analysis workers projections labrxiv \
    && mkdir -p /data \
    && chown labrxiv:labrxiv /data

USER labrxiv
CMD ["labrxiv", "--help"]
