//go:build !respire_mutation_renewal

package actor

// mutationRenewalUncertainIsOK is false in every real build. The mutation
// checks build with -tags respire_mutation_renewal to prove that the
// deterministic simulator and the chaos campaign catch a renewal of
// unknown outcome taken as confirmed (mutation_on.go).
const mutationRenewalUncertainIsOK = false
