# Shared by the shell tests (sourced): count passed and failed checks.
#   check CMD...   run CMD; a zero status passes, anything else fails (and says what)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if "$@"; then ok; else bad "$*"; fi; }
