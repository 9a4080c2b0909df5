# Logout Timeout
export TMOUT=0
readonly TMOUT
