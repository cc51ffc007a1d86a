#!/bin/sh
# The official postgres image's first start, as far as labrxiv's compose file uses it.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile
  initdb --username="$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=trust -D "$PGDATA" >/dev/null
  rm /tmp/pwfile
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    psql --no-psqlrc -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
      -c "CREATE DATABASE \"$POSTGRES_DB\""
  fi
  for script in /docker-entrypoint-initdb.d/*.sh; do
    [ -e "$script" ] && sh "$script"
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
