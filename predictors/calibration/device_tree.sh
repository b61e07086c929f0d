#!/bin/bash
# Leave predictors/data out of what the device tool carries, and put it back.
#
# The device tool copies the tracked files (and untracked ones git does not ignore) to the GPU machine in
# one transfer of at most 64 MiB. The tracked files are 66 MiB (60 of them measurements in predictors/data,
# which no device run reads), so every device call fails unless that folder is left out: untracked in the
# index and ignored for the calls, the files themselves untouched on disk.
#     predictors/calibration/device_tree.sh hide      # before the device calls
#     predictors/calibration/device_tree.sh restore   # after them, before any commit
# `hide` refuses when changes under predictors/data are staged (restore would drop them); `restore` puts back
# only that folder's index entries, so other staged work stays staged.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude=.git/info/exclude
line=/predictors/data/
case "${1:-}" in
  hide)
    if ! git diff --cached --quiet -- predictors/data; then
      echo "device_tree.sh: changes under predictors/data are staged; commit or unstage them first" >&2; exit 1
    fi
    grep -qxF "$line" "$exclude" 2>/dev/null || echo "$line" >> "$exclude"
    git rm -r -q --cached predictors/data
    size=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
    echo "device_tree.sh: predictors/data left out; the device tool carries $((size / 1048576)) MiB of files besides 'carry'"
    echo "device_tree.sh: run '$0 restore' before committing" ;;
  restore)
    git reset -q -- predictors/data
    sed -i "\\#^${line}\$#d" "$exclude"
    if [ -n "$(git status --short -- predictors/data)" ]; then
      echo "device_tree.sh: predictors/data differs from the last commit:" >&2; git status --short -- predictors/data | head >&2
    else
      echo "device_tree.sh: predictors/data is tracked again"
    fi ;;
  *) echo "usage: $0 hide|restore" >&2; exit 2 ;;
esac
