#!/usr/bin/env bash
# The main job: every claim checked from YAML to evidence, then the pull-request report.
#
#   validate -> lint -> ship-blocking falsifiers with mutants (writes evidence/) ->
#   verify the evidence -> promote --check -> report
#
# Every step runs even when an earlier one fails, so one run shows everything that is wrong;
# the exit status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
step() {
    local name=$1
    shift
    printf '\n\033[1m== %s\033[0m  (%s)\n' "$name" "$*"
    if ! "$@"; then
        failed+=("$name")
    fi
}

step validate pv validate contracts/
step lint pv lint --strict-test-binding
step falsifiers pytest contracts -m ship_blocking --pv-mutants --pv-evidence -p no:cacheprovider -q
step verify pv evidence verify evidence/
step promote-check pv promote --check
step report pv report

if ((${#failed[@]})); then
    printf '\nship-check: FAILED steps: %s\n' "${failed[*]}"
    exit 1
fi
printf '\nship-check: all steps passed\n'
