package relay

// LockKey exposes the advisory lock key of a keeper's listener, so tests
// can make a keeper look running.
var LockKey = lockKey
