//go:build !respire_mutation_renewal

package actor

// mutationRenewalAnswerIgnored is false in every real build. The mutation
// checks build with -tags respire_mutation_renewal to prove that the
// deterministic simulator and the chaos campaign catch a renewer that
// ignores its renewal's answer (mutation_on.go).
const mutationRenewalAnswerIgnored = false
