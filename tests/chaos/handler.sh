#!/bin/bash
# SPDX-License-Identifier: MIT
# The chaos runner's `roost agent run --exec` handler: logs the start and the end of every run
# to LOG (one line each, appended; short lines are atomic under O_APPEND), sleeps the payload's
# "ms", and fails as the payload's "kind" says: poison65 exits 65 (quarantine now), poison exits
# 1 every time (quarantined by claim.max_attempts), anything else exits 0 (ack).
#   handler.sh LOG WORKER      (payload JSON on stdin, ROOST_* in the environment)
log=$1
worker=$2
IFS= read -r -d '' payload
echo "S $EPOCHREALTIME $worker $ROOST_EVENT_ID $ROOST_ATTEMPT $ROOST_SEQUENCE $$" >>"$log"
ms=0
if [[ $payload =~ \"ms\":([0-9]+) ]]; then
    ms=${BASH_REMATCH[1]}
fi
rc=0
case $payload in
*'"kind":"poison65"'*) rc=65 ;;
*'"kind":"poison"'*) rc=1 ;;
esac
if [ "$ms" -gt 0 ]; then
    sleep "$(printf '0.%03d' "$ms")"
fi
echo "E $EPOCHREALTIME $worker $ROOST_EVENT_ID $rc $$" >>"$log"
exit $rc
