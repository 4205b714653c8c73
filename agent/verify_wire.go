package agent

// Verify is what a launch task carries for the verifier in the rental's
// container (the witness beyond the provider, DESIGN.md §8): where it
// posts its result and the credential that lets it post for this one
// rental only. The launcher hands them to the container as environment.
type Verify struct {
	// URL is the endpoint the verifier posts its result to, as the
	// container reaches the server.
	URL string `json:"url"`
	// Token is the rental-scoped credential (the server keeps its hash).
	Token string `json:"token"`
	// AtStart runs the verifier once when the container starts (platform
	// images, unless the renter opted out).
	AtStart bool `json:"at_start,omitempty"`
	// GPUName is the catalogue name of the rented GPUs: what a simulated
	// node's verifier reports, saying it is simulated, since it finds no
	// NVML in the container.
	GPUName string `json:"gpu_name,omitempty"`
}
