# Stand-in for redis:7.2 (Debian bookworm's redis-server 7.0): the compose file's
# command (`redis-server --appendonly yes ...`) and health check (`redis-cli ping`) run
# as they are. See README.md here.
FROM labrxiv-offline/debian:bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-server redis-tools \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
CMD ["redis-server"]
