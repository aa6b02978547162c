#!/usr/bin/env bash
# One-time setup on the Prefect server named by $PREFECT_API_URL (idempotent: safe to run again).
#
#   - work pool "local-process" (type process) for the prefect.yaml + worker route
#   - global concurrency limit "training-service" ($RX_SERVICE_LIMIT_NAME if set) with $RX_SERVICE_CONCURRENCY slots (default 2):
#     at most that many requests in flight at the training service across all runs (each request
#     holds one slot: experiment/service/request_slots.py; a deployment run is refused without this limit)
#
# Usage: PREFECT_API_URL=http://127.0.0.1:4200/api deployments/setup.sh
set -euo pipefail
export DO_NOT_TRACK="${DO_NOT_TRACK:-1}" PREFECT_SERVER_ANALYTICS_ENABLED="${PREFECT_SERVER_ANALYTICS_ENABLED:-false}"

WORK_POOL="${RX_WORK_POOL:-local-process}"
LIMIT_NAME="${RX_SERVICE_LIMIT_NAME:-training-service}"  # flows/concurrency.py: service_limit_name()
LIMIT_SLOTS="${RX_SERVICE_CONCURRENCY:-2}"

if [[ -z "${PREFECT_API_URL:-}" ]]; then
  echo "PREFECT_API_URL is not set; start 'prefect server start' and export PREFECT_API_URL=http://127.0.0.1:4200/api" >&2
  exit 2
fi

# Another setup against the same server (a second terminal, a second worker host) may create the pool or the
# limit between our check and our create: a create that fails is fine when the thing exists afterwards.
if prefect work-pool inspect "$WORK_POOL" >/dev/null 2>&1; then
  echo "work pool $WORK_POOL exists"
elif created=$(prefect work-pool create "$WORK_POOL" --type process 2>&1); then
  echo "$created"
elif prefect work-pool inspect "$WORK_POOL" >/dev/null 2>&1; then
  echo "work pool $WORK_POOL exists (another setup created it meanwhile)"
else
  echo "$created" >&2
  exit 1
fi

if prefect gcl inspect "$LIMIT_NAME" >/dev/null 2>&1; then
  prefect gcl update "$LIMIT_NAME" --limit "$LIMIT_SLOTS"
elif ! created=$(prefect gcl create "$LIMIT_NAME" --limit "$LIMIT_SLOTS" 2>&1); then
  # exists now (another setup created it meanwhile), else the update fails with the server's reason
  prefect gcl update "$LIMIT_NAME" --limit "$LIMIT_SLOTS" || { echo "$created" >&2; exit 1; }
fi
echo "global concurrency limit $LIMIT_NAME: $LIMIT_SLOTS slots"
