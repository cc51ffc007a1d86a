# Stand-in for prom/prometheus (Debian bookworm's Prometheus 2.42): the compose file's
# arguments go to /usr/bin/prometheus as they do to the official image's entrypoint.
# See README.md here.
FROM labrxiv-offline/debian:bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /prometheus && chown nobody:nogroup /prometheus
USER nobody
ENTRYPOINT ["/usr/bin/prometheus"]
