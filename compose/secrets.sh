#!/bin/sh
# The stack's passwords, random, in the .env file `docker compose` reads beside
# docker-compose.yml (or the file named as the first argument), readable by its owner only.
# A password the file already has is kept: PostgreSQL keeps the one it was first started
# with, and a new one here would lock the services out. docs/deploy.md, "Secrets".
#
#   compose/secrets.sh                 # writes compose/.env
#   compose/secrets.sh /path/to/.env
set -eu

file=${1:-"$(dirname "$0")/.env"}
umask 077
touch "$file"
chmod 600 "$file"

for name in REDIS_PASSWORD POSTGRES_PASSWORD GRAFANA_DB_PASSWORD GRAFANA_ADMIN_PASSWORD; do
  if grep -q "^$name=\$" "$file"; then
    echo "$file: $name is empty: give it a value or delete its line" >&2
    exit 1
  fi
  if grep -q "^$name=" "$file"; then
    echo "$file: $name kept"
    continue
  fi
  # 32 hex digits (128 bits): letters and digits only, so it goes into a URL as it is.
  password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  [ -z "$(tail -c 1 "$file")" ] || echo >> "$file"
  echo "$name=$password" >> "$file"
  echo "$file: $name written"
done
