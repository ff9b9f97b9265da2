#!/usr/bin/env bash
# A private PostgreSQL 15 cluster with pg_stat_statements (planning tracked), for seeing what a
# bench's statements cost PostgreSQL: how often each is planned and run, and for how long.
#
#   bench/shared/pg-statements.sh start      # initdb + start on 127.0.0.1:5499 (once)
#   bench/shared/pg-statements.sh reset      # forget what was counted so far
#   GANTRY_BENCH_PG_URL=postgres://postgres@127.0.0.1:5499/postgres \
#     npx tsx bench/deploy/deploy.ts --postgres --n 1 --k 60
#   bench/shared/pg-statements.sh top [N]    # the N costliest statements (planning + execution)
#   bench/shared/pg-statements.sh per <LIKE> # totals divided by the calls of one statement (e.g.
#                                            # 'insert into "deployments"%': per deployment)
#   bench/shared/pg-statements.sh stop
#
# The times are PostgreSQL's wall time in planning and executing (a lock wait counts as
# execution), so on a saturated machine they include time spent waiting for a core.
set -euo pipefail

PORT="${GANTRY_PG_STATEMENTS_PORT:-5499}"
DIR="${GANTRY_PG_STATEMENTS_DIR:-/tmp/gantry-pg-statements}"
BIN="$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)"
psql_() { psql -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -P pager=off "$@"; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "${1:-}" in
  start)
    [ -n "$BIN" ] || { echo "needs Debian's postgresql-15 (/usr/lib/postgresql/15/bin)" >&2; exit 1; }
    if [ ! -f "$DIR/data/PG_VERSION" ]; then
      mkdir -p "$DIR"
      [ "$(id -u)" = 0 ] && chown postgres "$DIR"
      as_postgres "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
      cat >>"$DIR/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.track_planning = on
pg_stat_statements.max = 5000
EOF
    fi
    # Started again only when it is not running (a second `start` just prints the URL).
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1 ||
      as_postgres "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w start >/dev/null
    psql_ -qc 'create extension if not exists pg_stat_statements'
    echo "GANTRY_BENCH_PG_URL=postgres://postgres@127.0.0.1:$PORT/postgres"
    ;;
  reset) psql_ -qAtc 'select pg_stat_statements_reset()' >/dev/null ;;
  top)
    psql_ -c "select calls, plans, round(total_plan_time::numeric, 1) as plan_ms,
                     round(total_exec_time::numeric, 1) as exec_ms,
                     left(regexp_replace(query, '\s+', ' ', 'g'), 110) as statement
              from pg_stat_statements
              where query not like '%pg_stat_statements%' and query !~* '^(create|drop) database'
              order by total_plan_time + total_exec_time desc limit ${2:-20}"
    ;;
  per)
    [ -n "${2:-}" ] || { echo "usage: $0 per <LIKE pattern of one statement>" >&2; exit 2; }
    # On stdin: psql fills in :'unit' there, not in -c.
    psql_ -v unit="$2" <<'SQL'
with unit as (select sum(calls) as n from pg_stat_statements where query like :'unit')
select (select n from unit) as units, sum(plans) as plans,
       round((sum(total_plan_time) / (select n from unit))::numeric, 3) as plan_ms_each,
       round((sum(total_exec_time) / (select n from unit))::numeric, 3) as exec_ms_each
from pg_stat_statements where query not like '%pg_stat_statements%' and query !~* '^(create|drop) database';
SQL
    ;;
  stop) as_postgres "$BIN/pg_ctl" -D "$DIR/data" -m fast stop >/dev/null ;;
  *)
    sed -n '2,15p' "$0" >&2
    exit 2
    ;;
esac
