#!/usr/bin/env bash
# Takes the screenshots of docs/screenshots/ as an operator sees them: a real Prefect server on a
# non-default port with its own PREFECT_HOME in a temporary directory, three runs through the CLI (the GS1
# wiring rehearsal, the same spec blocked by an embedded backend that refuses capacity, the TriMuon wiring
# rehearsal), the UI in headless Chromium, and `python -m flows.runs` rendered from its text.
# Run from the repository root with the venv active: bash docs/screenshots/take.sh  (about 6 min on 2 cores)
set -euo pipefail
OUT=docs/screenshots
WORK=$(mktemp -d /tmp/screenshots-XXXXXX)
PORT=${SCREENSHOT_PREFECT_PORT:-4321}
BACKEND_PORT=${SCREENSHOT_BACKEND_PORT:-8791}
export PREFECT_HOME=$WORK/prefect-home PREFECT_API_URL=http://127.0.0.1:$PORT/api
export PREFECT_UI_API_URL=$PREFECT_API_URL   # the UI page on a non-default port asks this address for its data
export PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1 HF_HUB_OFFLINE=1
RUNS=$WORK/runs
mkdir -p "$PREFECT_HOME" "$RUNS"

prefect server start --host 127.0.0.1 --port "$PORT" > "$WORK/server.log" 2>&1 &
SERVER=$!
python -m embedded_tinker serve --port "$BACKEND_PORT" --capacity-exhausted-seconds 36000 --checkpoint-dir "$WORK/backend-checkpoints" > "$WORK/backend.log" 2>&1 &
BACKEND=$!
trap 'kill $SERVER $BACKEND 2>/dev/null || true' EXIT
until curl -sf "$PREFECT_API_URL/health" > /dev/null && curl -sf "http://127.0.0.1:$BACKEND_PORT/api/v1/healthz" > /dev/null; do
  sleep 1
done

# (a) a rehearsal that reaches its verdict; (b) the same spec against a backend that refuses capacity
# (RX_CAPACITY_TIME_SCALE=0.01: the contract's 10 minutes of refusals take 6 s; exit 4); a TriMuon rehearsal beside them
python -m flows.run specs/gs1_kernel_vs_grpo_gsm8k.json --rehearse --rehearsal-scale wiring --runs-dir "$RUNS" > "$WORK/gs1.log" 2>&1
TINKER_BASE_URL=http://127.0.0.1:$BACKEND_PORT TINKER_API_KEY=tml-local RX_CAPACITY_TIME_SCALE=0.01 \
  python -m flows.run specs/gs1_kernel_vs_grpo_gsm8k.json --rehearse --rehearsal-scale wiring --fresh --runs-dir "$RUNS" \
  > "$WORK/blocked.log" 2>&1 || [ $? -eq 4 ]
python -m flows.run specs/trimuon_vs_dimuon_no_robots.json --rehearse --rehearsal-scale wiring --runs-dir "$RUNS" > "$WORK/trimuon.log" 2>&1

# the flow runs and the GS1 rehearsal's summary artifact, from the server's REST API
read -r COMPLETED BLOCKED SUMMARY < <(python - <<'EOF'
import os, httpx
api = os.environ["PREFECT_API_URL"]
runs = httpx.post(f"{api}/flow_runs/filter", json={"sort": "START_TIME_ASC"}).json()
gs1 = [run for run in runs if run["name"].startswith("gs1-")]
done = next(run for run in gs1 if run["state_name"] == "Completed")
blocked = next(run for run in gs1 if run["state_name"] == "CapacityBlocked")
artifacts = httpx.post(f"{api}/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [done["id"]]}}}).json()
print(done["id"], blocked["id"], next(a["id"] for a in artifacts if a["key"].startswith("summary-")))
EOF
)

shot() {  # shot WIDTH,HEIGHT FILE URL: a PNG of the page once its scripts have settled, quantized to stay small
  chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
    --run-all-compositor-stages-before-draw --virtual-time-budget=30000 --window-size="$1" --screenshot="$2" "$3" \
    > "$WORK/chromium.log" 2>&1
  python -c "import sys; from PIL import Image; Image.open(sys.argv[1]).convert('RGB').quantize(256).save(sys.argv[1], optimize=True)" "$2"
}
UI=http://127.0.0.1:$PORT
shot 1280,1150 "$OUT/summary-rehearsal.png" "$UI/artifacts/artifact/$SUMMARY"
shot 1280,900 "$OUT/capacity-blocked-run.png" "$UI/runs/flow-run/$BLOCKED"
shot 1280,1000 "$OUT/runs-list.png" "$UI/runs"

# (c) flows.runs in a terminal: the text as it printed, and that text rendered as a terminal page
BLOCKED_RUN=$(python -m flows.runs --runs-dir "$RUNS" --kind capacity_blocked --json | python -c "import json, sys; print(json.load(sys.stdin)[0]['run_id'])")
{
  for command in "python -m flows.runs --runs-dir $RUNS" "python -m flows.runs --runs-dir $RUNS --kind capacity_blocked" \
                 "python -m flows.runs --runs-dir $RUNS show $BLOCKED_RUN"; do
    echo "\$ $command"
    COLUMNS=200 $command
    echo
  done
} > "$OUT/flows-runs.txt"
python - "$OUT/flows-runs.txt" "$WORK/flows-runs.html" <<'EOF'
import html, sys
text = open(sys.argv[1]).read().rstrip("\n")
lines = [f'<span class="prompt">{html.escape(line)}</span>' if line.startswith("$ ") else html.escape(line)
         for line in text.splitlines()]
open(sys.argv[2], "w").write(
    "<!doctype html><meta charset='utf-8'><style>body{margin:0;background:#1e1e1e}pre{margin:0;padding:14px;"
    "color:#ddd;font:13px/1.35 'DejaVu Sans Mono',monospace;white-space:pre-wrap}.prompt{color:#8ae234}</style>"
    "<pre>" + "\n".join(lines) + "</pre>")
EOF
shot 1500,440 "$OUT/flows-runs.png" "file://$WORK/flows-runs.html"
ls -la "$OUT"/*.png
echo "work directory (runs, logs, the server's home): $WORK"
