//go:build respire_mutation_handover

package conn

// handOverOwnerCheck breaks, on purpose, the hand-over: the script hands
// the key over whoever holds it, so a release by a lock that lost its key
// overwrites the new owner's. Only for `make dst-mutation` and
// `make chaos-mutation` (-tags respire_mutation_handover), which must catch
// it.
const handOverOwnerCheck = "true"
