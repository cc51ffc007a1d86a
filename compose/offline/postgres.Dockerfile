# Stand-in for postgres:15 (Debian bookworm's PostgreSQL 15): postgres-entrypoint.sh does
# what the official image's entrypoint does for the compose file (POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB, the scripts in /docker-entrypoint-initdb.d on an empty
# volume). See README.md here.
FROM labrxiv-offline/debian:bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql /docker-entrypoint-initdb.d \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/
USER postgres
ENTRYPOINT ["postgres-entrypoint.sh"]
