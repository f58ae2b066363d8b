#!/usr/bin/env bash
# The main job: every claim checked from YAML to evidence, then the pull-request report.
#
#   validate -> lint -> ship-blocking falsifiers with mutants (writes evidence/) ->
#   verify the evidence -> promote --check -> report
#
# The CI workflow (.github/workflows/pv.yml) runs this same script, so the two cannot drift:
#
#   scripts/ship-check.sh [--base REF] [--pr] [--format markdown|github] [--review-dir DIR [--review-link URL]]
#                         [--evidence-branch BRANCH [--publish] [--remote NAME]] [--falsify "ARGS"]
#                         [--shard K/N | --parts DIR] [-- PYTEST_ARGS...]
#
#   --base REF              check version bumps (lint) and review against REF's evidence
#   --pr                    a pull request: bundles of contracts or code it edits are reported
#                           stale and its own unsigned bundles untrusted, not failed; the status
#                           is main's to decide, so promote --check is not a step; with --base,
#                           the falsifiers it changes run too, advisory ones included
#                           (pytest --pv-changed-since REF, -m "(…) or pv_changed")
#   --format F              pv report's format (github also writes the job summary and annotations)
#   --review-dir DIR        write the review's every form to DIR (pv report --out-dir): the comment,
#                           the summary, JSON, HTML, mutation report and check run that
#                           `pv review publish` posts
#   --review-link URL       where the HTML review will be (the comment links it: the run's artifacts)
#   --evidence-branch B     the evidence is branch B of the remote, checked out as a worktree in
#                           .pv-evidence/ (PV_EVIDENCE points there): bundles signed by CI live on
#                           B, which only the protected workflow pushes; a missing B is created
#                           from the bundles in evidence/ (the migration), with their ledgers
#   --publish               after the checks, commit this run's bundles to B and push it
#   --remote NAME           the remote holding B (default origin)
#   --falsify "ARGS"        what the falsifier step selects (default: contracts -m ship_blocking)
#   --shard K/N             one job of a CI matrix: only the falsifier step, on the K-th of N shards
#                           of the selection (pytest --pv-shard, split by the durations the evidence
#                           recorded); it writes its part to <evidence>/.parts/, not bundles
#   --parts DIR             the job after the matrix: the falsifier step merges the parts found under
#                           DIR into one run (pv evidence merge) instead of running the falsifiers
#   -- ARGS                 more pytest arguments for the falsifier step (e.g. -n auto)
#
# Every step runs even when an earlier one fails, so one run shows everything that is wrong;
# the exit status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

base=""
pr=0
format=markdown
branch=""
publish=0
remote=origin
falsify="contracts -m ship_blocking"
review_dir=""
review_link=""
shard=""
parts=""
pytest_extra=()
while (($#)); do
    case $1 in
        --base) base=${2:?--base needs a git ref}; shift 2 ;;
        --pr) pr=1; shift ;;
        --format) format=${2:?--format needs markdown or github}; shift 2 ;;
        --review-dir) review_dir=${2:?--review-dir needs a folder}; shift 2 ;;
        --review-link) review_link=${2:?--review-link needs a URL}; shift 2 ;;
        --evidence-branch) branch=${2:?--evidence-branch needs a branch name}; shift 2 ;;
        --publish) publish=1; shift ;;
        --remote) remote=${2:?--remote needs a remote name}; shift 2 ;;
        --falsify) falsify=${2:?--falsify needs pytest arguments}; shift 2 ;;
        --shard) shard=${2:?--shard needs K/N}; shift 2 ;;
        --parts) parts=${2:?--parts needs a folder}; shift 2 ;;
        --) shift; pytest_extra=("$@"); break ;;
        -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) printf 'ship-check: unknown argument %s (see --help)\n' "$1" >&2; exit 2 ;;
    esac
done

if ((publish)) && [[ -z $branch ]]; then
    printf 'ship-check: --publish needs --evidence-branch\n' >&2
    exit 2
fi
if [[ -n $shard && ( -n $parts || $publish -eq 1 ) ]]; then
    printf 'ship-check: a shard only writes its part (--shard with --parts or --publish)\n' >&2
    exit 2
fi
if ((publish && pr)); then
    printf 'ship-check: a pull request never publishes evidence (--publish with --pr)\n' >&2
    exit 2
fi

# The evidence branch as a worktree: the bundles CI signed on the protected branch, and nothing a
# pull request committed (a PR's own evidence/ folder is not read).
if [[ -n $branch ]]; then
    worktree=.pv-evidence
    if [[ -e $worktree ]]; then
        git worktree remove --force "$worktree" 2>/dev/null || rm -rf "$worktree"
    fi
    git worktree prune
    if git fetch -q "$remote" "refs/heads/$branch" 2>/dev/null; then
        git worktree add -q --detach "$worktree" FETCH_HEAD || exit 2
    else
        printf 'ship-check: %s has no branch %s yet: starting it from evidence/\n' "$remote" "$branch"
        git worktree add -q --detach "$worktree" HEAD || exit 2
        (
            cd "$worktree" || exit 2
            git checkout -q --orphan pv-evidence-new && git rm -rq --cached . && find . -mindepth 1 -maxdepth 1 \
                ! -name .git -exec rm -rf {} +
        ) || exit 2
        if [[ -d evidence ]]; then
            cp -R evidence/. "$worktree"/
            rm -rf "$worktree"/.journal
        fi
        if ! pv evidence ledger adopt --evidence "$worktree" >/dev/null; then
            printf 'ship-check: could not take the existing bundles into their ledgers\n' >&2
            exit 2
        fi
    fi
    export PV_EVIDENCE=$PWD/$worktree
fi
evidence_dir=${PV_EVIDENCE:-evidence}

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
((pr)) && lint_args+=(--pr)
report_args=(--format "$format")
if [[ -n $base ]]; then
    lint_args+=(--base "$base")
    report_args+=(--base "$base")
fi
[[ -n $review_dir ]] && report_args+=(--out-dir "$review_dir")
[[ -n $review_link ]] && report_args+=(--link "$review_link")
verify_args=("$evidence_dir")
((pr)) && verify_args+=(--allow-stale --allow-untrusted)

read -r -a selection <<<"$falsify"
if [[ -n $shard ]]; then
    step falsifiers pytest "${selection[@]}" --pv-mutants --pv-evidence --pv-shard "$shard" -p no:cacheprovider -q \
        "${pytest_extra[@]}"
    if ((${#failed[@]})); then
        printf '\nship-check: shard %s: FAILED steps: %s\n' "$shard" "${failed[*]}"
        exit 1
    fi
    printf '\nship-check: shard %s written to %s/.parts/\n' "$shard" "$evidence_dir"
    exit 0
fi
step validate pv validate contracts/
step lint pv lint "${lint_args[@]}"
if ((pr)) && [[ -n $base ]]; then
    # what the pull request changes is measured in it: each `-m EXPR` also takes the changed falsifiers
    for i in "${!selection[@]}"; do
        if [[ ${selection[$i]} == -m && -n ${selection[$((i + 1))]:-} ]]; then
            selection[i + 1]="(${selection[$((i + 1))]}) or pv_changed"
        fi
    done
    selection+=(--pv-changed-since "$base")
fi
if [[ -n $parts ]]; then
    step falsifiers pv evidence merge "$parts" --evidence "$evidence_dir"
else
    step falsifiers pytest "${selection[@]}" --pv-mutants --pv-evidence -p no:cacheprovider -q "${pytest_extra[@]}"
fi
step verify pv evidence verify "${verify_args[@]}"
if ((pr)); then
    printf '\n== promote-check  (skipped: a pull request'"'"'s own bundles are reported, never back a status)\n'
else
    step promote-check pv promote --check
fi
step report pv report "${report_args[@]}"

if ((publish)); then
    publish_evidence() {
        local sha
        sha=$(git rev-parse --short HEAD)
        git -C "$worktree" add -A &&
            { git -C "$worktree" diff --cached --quiet || git -C "$worktree" commit -q -m "pv evidence for $sha"; } ||
            return 1
        git -C "$worktree" push -q "$remote" "HEAD:refs/heads/$branch" && return 0
        # another writer published first (the other job of this push): its contracts' ledgers are
        # other files, so replaying this commit on top is clean; the same contract's is a conflict
        git -C "$worktree" fetch -q "$remote" "refs/heads/$branch" &&
            git -C "$worktree" rebase -q FETCH_HEAD &&
            git -C "$worktree" push -q "$remote" "HEAD:refs/heads/$branch"
    }
    step publish publish_evidence
fi

if ((${#failed[@]})); then
    printf '\nship-check: FAILED steps: %s\n' "${failed[*]}"
    exit 1
fi
printf '\nship-check: all steps passed\n'
