#!/usr/bin/env bash
# The main job: every claim checked from YAML to evidence, then the pull-request report.
#
#   validate -> lint -> ship-blocking falsifiers with mutants (writes evidence/) ->
#   verify the evidence -> promote --check -> report
#
# The CI workflow (.github/workflows/pv.yml) runs this same script, so the two cannot drift:
#
#   scripts/ship-check.sh [--base REF] [--pr] [--format markdown|github] [-- PYTEST_ARGS...]
#
#   --base REF   check version bumps (lint) and report changes against REF
#   --pr         a pull request: bundles of contracts it edits are reported stale, not failed
#   --format F   pv report's format (github also writes the job summary)
#   -- ARGS      more pytest arguments for the falsifier step (e.g. -n auto)
#
# Every step runs even when an earlier one fails, so one run shows everything that is wrong;
# the exit status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

base=""
pr=0
format=markdown
pytest_extra=()
while (($#)); do
    case $1 in
        --base) base=${2:?--base needs a git ref}; shift 2 ;;
        --pr) pr=1; shift ;;
        --format) format=${2:?--format needs markdown or github}; shift 2 ;;
        --) shift; pytest_extra=("$@"); break ;;
        -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
        *) printf 'ship-check: unknown argument %s (see --help)\n' "$1" >&2; exit 2 ;;
    esac
done

failed=()
step() {
    local name=$1
    shift
    printf '\n\033[1m== %s\033[0m  (%s)\n' "$name" "$*"
    if ! "$@"; then
        failed+=("$name")
    fi
}

lint_args=(--strict-test-binding)
report_args=(--format "$format")
if [[ -n $base ]]; then
    lint_args+=(--base "$base")
    report_args+=(--base "$base")
fi
verify_args=(evidence/)
((pr)) && verify_args+=(--allow-stale)

step validate pv validate contracts/
step lint pv lint "${lint_args[@]}"
step falsifiers pytest contracts -m ship_blocking --pv-mutants --pv-evidence -p no:cacheprovider -q "${pytest_extra[@]}"
step verify pv evidence verify "${verify_args[@]}"
step promote-check pv promote --check
step report pv report "${report_args[@]}"

if ((${#failed[@]})); then
    printf '\nship-check: FAILED steps: %s\n' "${failed[*]}"
    exit 1
fi
printf '\nship-check: all steps passed\n'
