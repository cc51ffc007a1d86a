# Stand-in for python:3.11-slim, from Debian bookworm's packages (Python 3.11): a
# virtual environment at /usr/local/py on PATH, so `python` and `pip` are what the
# labrxiv Dockerfile expects. Certificates in extra-ca/*.crt (a TLS-intercepting
# proxy's) are trusted by pip too. See README.md here.
FROM labrxiv-offline/debian:bookworm
COPY extra-ca/ /tmp/extra-ca/
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && { cat /tmp/extra-ca/*.crt >> /etc/ssl/certs/ca-certificates.crt 2>/dev/null || true; } \
    && rm -rf /tmp/extra-ca \
    && python3.11 -m venv /usr/local/py
ENV PATH=/usr/local/py/bin:$PATH PIP_CERT=/etc/ssl/certs/ca-certificates.crt
