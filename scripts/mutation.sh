#!/usr/bin/env bash
# Mutation testing (mutmut 3) of the modules that hold the guarantees, each group of modules
# against its own tests only: minutes per group, not the hours of the whole suite.
#
#   scripts/mutation.sh                  # every group: ratelimit backfill sync webhooks
#   scripts/mutation.sh ratelimit sync   # some of them
#
# Needs .venv with ".[dev]" and mutmut (.venv/bin/pip install -e ".[dev]" mutmut), and
# Redis and PostgreSQL on 127.0.0.1 like the suite (tests that need them skip otherwise,
# and more mutants survive). Each group runs in .mutation/<group>/ (git-ignored), a fresh
# copy of asyncwifi/, tests/ and pyproject.toml plus the group's [tool.mutmut] section;
# mutmut works in .mutation/<group>/mutants/. The run is niced and uses one worker (the
# machine is shared): MUTATION_NICE and MUTATION_CHILDREN change that.
#
# Afterwards scripts/mutation_report.py prints per module the mutants killed, the known
# equivalent ones (scripts/mutation_equivalent.txt) and the survivors, and writes them to
# .mutation/<group>/report.txt; the script fails when a survivor is not on the list.
# `cd .mutation/<group> && ../../.venv/bin/mutmut show <mutant>` shows one mutant's diff.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
mutmut="$root/.venv/bin/mutmut"
python="$root/.venv/bin/python"
nice_level="${MUTATION_NICE:-10}"
children="${MUTATION_CHILDREN:-1}"

# a group's modules, its tests, and more pytest arguments (the arrays below)
configure() {
    extra=()
    case "$1" in
    ratelimit)
        modules=(asyncwifi/ratelimit/_window.py asyncwifi/ratelimit/_limits.py)
        tests=(tests/ratelimit/test_rl_window.py tests/ratelimit/test_rl_properties.py
            tests/ratelimit/test_rl_lua_mirror.py tests/ratelimit/test_rl_scheduler.py
            tests/ratelimit/test_rl_limits.py)
        ;;
    backfill)
        modules=(asyncwifi/engine/_jsonl_output.py asyncwifi/engine/_jsonl.py)
        tests=(tests/backfill)
        ;;
    sync)
        modules=(asyncwifi/sync/_checkpoint.py asyncwifi/engine/_feeds.py asyncwifi/engine/_snapshots.py)
        # not test_follow.py (17 s a mutant on a scaled real-time clock): follow mode is
        # covered on a virtual clock by test_feeds.py
        tests=(tests/sync/test_sync_units.py tests/sync/test_feeds.py
            tests/sync/test_sync_pass.py)
        extra=(-k "not postgresql") # the feeds do not depend on the database
        ;;
    webhooks)
        modules=(asyncwifi/webhooks/_dedup.py)
        tests=(tests/webhooks/test_dedup.py)
        ;;
    *)
        echo "unknown group: $1 (ratelimit backfill sync webhooks)" >&2
        return 1
        ;;
    esac
}

toml_array() { # arguments -> a TOML array of strings
    local out="" word
    for word in "$@"; do
        out+="${out:+, }\"$word\""
    done
    echo "[$out]"
}

existing() { # the paths that exist (a group's test file may not be written yet)
    local path
    for path in "$@"; do
        if [[ -e "$root/$path" ]]; then echo "$path"; fi
    done
}

run_group() {
    local group="$1" work
    configure "$group"
    mapfile -t tests < <(existing "${tests[@]}")
    work="$root/.mutation/$group"
    rm -rf "$work"
    mkdir -p "$work"
    cp -r "$root/asyncwifi" "$root/tests" "$root/pyproject.toml" "$work/"
    cp "$root/scripts/mutation_conftest.py" "$work/conftest.py"
    find "$work" -name __pycache__ -prune -exec rm -rf {} +
    cat >>"$work/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["asyncwifi"]
only_mutate = $(toml_array "${modules[@]}")
pytest_add_cli_args_test_selection = $(toml_array "${tests[@]}")
pytest_add_cli_args = $(toml_array -p no:cacheprovider -q "${extra[@]}")
also_copy = ["conftest.py"]
use_git_change_detection = false
EOF
    echo "== $group: ${modules[*]}"
    echo "   tests: ${tests[*]} ${extra[*]}"
    (cd "$work" && nice -n "$nice_level" "$mutmut" run --max-children "$children") \
        >"$work/run.log" 2>&1 || {
        tail -n 40 "$work/run.log"
        return 1
    }
    "$python" "$root/scripts/mutation_report.py" "$work" "${modules[@]}" | tee "$work/report.txt"
    return "${PIPESTATUS[0]}"
}

groups=("$@")
if [[ ${#groups[@]} -eq 0 ]]; then groups=(ratelimit backfill sync webhooks); fi
for group in "${groups[@]}"; do
    configure "$group"
done
status=0
for group in "${groups[@]}"; do
    run_group "$group" || status=1
done
exit "$status"
