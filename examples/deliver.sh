#!/bin/sh
# An --exec command for `retryq work`: POSTs the job's payload (standard input) to
# $DELIVER_URL and answers in the exec protocol's exit statuses (docs/operating.md):
# 0 done; 65 permanent (the receiver refused the request: 4xx other than 408 and 429);
# 75 retry (no answer, 408, 429, 5xx). The worker's --timeout kills it if it runs too long.
#
#     DELIVER_URL=https://shop.example/deliver retryq work --worker w1 --exec examples/deliver.sh
set -u
: "${DELIVER_URL:?set DELIVER_URL to the receiver}"
code=$(curl --silent --output /dev/null --write-out '%{http_code}' \
  --header "Idempotency-Key: $RETRYQ_JOB_ID" \
  --header 'Content-Type: application/json' --data-binary @- "$DELIVER_URL") || exit 75
case "$code" in
  2??) exit 0 ;;
  408|429) exit 75 ;;
  4??) echo "refused: HTTP $code" >&2; exit 65 ;;
  *) echo "HTTP $code" >&2; exit 75 ;;
esac
