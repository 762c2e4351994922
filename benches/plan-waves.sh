#!/usr/bin/env bash
# Time `wavecrew plan waves --json` as a whole process (release build) on
# sessions of 10k to 200k tasks, in both shapes of task-analysis.json:
#
#   object: the validator's shape, `dependency_graph {<id>: {depends_on, role}}`
#           plus a `tasks` array `[{id, subject, owner, blockedBy, metadata}]`;
#   array:  what team-coordinate writes, `dependency_graph {<id>: [<dep>…]}`,
#           descriptions under `capabilities[].tasks[{id, description}]`,
#           no `tasks` array.
#
# Each task depends on up to 3 random earlier tasks (seeded, so every run
# sees the same graphs). Prints a markdown table: size, shape, file size,
# best and median wall time of RUNS runs, and time per 1k tasks (flat when
# loading is linear).
#
# Run by hand, not in CI:  benches/plan-waves.sh [SIZES…]
#   RUNS=5 (default 3)   WAVECREW=path/to/wavecrew (default: builds target/release/wavecrew)
#   TIMEOUT=150: give up on a size after this many seconds (reported as `> 150`)
set -euo pipefail

cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 20000 40000 100000 200000)
runs=${RUNS:-3}
limit=${TIMEOUT:-0}

if [ -z "${WAVECREW:-}" ]; then
    cargo build --release --locked -q -p wavecrew-cli --bin wavecrew
    WAVECREW=target/release/wavecrew
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# generate <shape> <n> <dir>: writes <dir>/task-analysis.json.
generate() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, random, sys
shape, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(7)
ids = [f"IMPL-{i:07d}" for i in range(n)]
deps = [sorted({ids[rng.randrange(i)] for _ in range(rng.randint(0, 3))}) if i else [] for i in range(n)]
if shape == "object":
    doc = {
        "capabilities": [{"name": "developer", "prefix": "IMPL", "artifact_type": "code"}],
        "dependency_graph": {t: {"depends_on": d, "role": "developer"} for t, d in zip(ids, deps)},
        "roles": [{"name": "developer", "prefix": "IMPL", "inner_loop": True}],
        "tasks": [{"id": t, "subject": f"Implement part {k}", "owner": "developer", "blockedBy": d,
                   "metadata": {"executor": "codex"}} for k, (t, d) in enumerate(zip(ids, deps))],
        "complexity_score": 3,
    }
else:
    doc = {
        "task_description": "a large generated pipeline",
        "capabilities": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)",
                          "tasks": [{"id": t, "description": f"Implement part {k} of the system"} for k, t in enumerate(ids)],
                          "artifacts": ["implementation-summary.md"]}],
        "dependency_graph": dict(zip(ids, deps)),
        "roles": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "task_count": n, "inner_loop": True}],
        "complexity": {"total_score": 3, "level": "low"},
    }
with open(f"{out}/task-analysis.json", "w") as f:
    json.dump(doc, f, indent=2)
PY
}

echo "wavecrew plan waves --json, whole process, best and median of $runs runs ($(nproc) cores)"
echo
echo "| tasks | shape | JSON MB | best s | median s | ms per 1k tasks (best) |"
echo "|---:|---|---:|---:|---:|---:|"
for n in "${sizes[@]}"; do
    for shape in object array; do
        dir="$work/$shape-$n"
        mkdir -p "$dir"
        generate "$shape" "$n" "$dir"
        mb=$(python3 -c "import os,sys; print(f'{os.path.getsize(sys.argv[1])/1e6:.1f}')" "$dir/task-analysis.json")
        times=()
        timed_out=no
        for _ in $(seq "$runs"); do
            start=$(date +%s.%N)
            status=0
            timeout "$limit" "$WAVECREW" plan waves --json "$dir" >"$work/out.json" || status=$?
            end=$(date +%s.%N)
            if [ "$status" = 124 ]; then timed_out=yes; break; fi
            [ "$status" = 0 ] || { echo "wavecrew failed with exit $status on $dir" >&2; exit 1; }
            times+=("$(python3 -c "print(f'{$end - $start:.3f}')")")
        done
        if [ "$timed_out" = yes ]; then
            echo "| $n | $shape | $mb | > $limit | > $limit | |"
            rm -rf "$dir"
            continue
        fi
        # The output must describe every task, or the timing means nothing.
        python3 - "$work/out.json" "$n" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert out["tasks"] == int(sys.argv[2]), out["tasks"]
assert sum(len(w) for w in out["waves"]) == int(sys.argv[2])
PY
        read -r best median per1k < <(python3 - "$n" "${times[@]}" <<'PY'
import statistics, sys
n, ts = int(sys.argv[1]), sorted(float(t) for t in sys.argv[2:])
print(f"{ts[0]:.3f} {statistics.median(ts):.3f} {ts[0] * 1000 / (n / 1000):.2f}")
PY
)
        echo "| $n | $shape | $mb | $best | $median | $per1k |"
        rm -rf "$dir"
    done
done
