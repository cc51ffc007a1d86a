#!/bin/sh
# Grafana reads the log and the read models with a role that can read and do nothing
# else. The postgres image runs this once, when it creates the database (an empty
# volume); docs/deploy.md says how to run it on an existing one.
set -eu

psql --no-psqlrc -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v reader_password="$GRAFANA_DB_PASSWORD" \
  -v owner="$POSTGRES_USER" \
  -v db="$POSTGRES_DB" <<'SQL'
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'grafana_reader') AS missing \gset
\if :missing
  CREATE ROLE grafana_reader LOGIN;
\endif
ALTER ROLE grafana_reader WITH LOGIN PASSWORD :'reader_password';
GRANT CONNECT ON DATABASE :"db" TO grafana_reader;
GRANT USAGE ON SCHEMA public TO grafana_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO grafana_reader;
-- labrxiv creates its tables when its processes first start, after this script.
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT SELECT ON TABLES TO grafana_reader;
SQL
