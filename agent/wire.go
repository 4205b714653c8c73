// Package agent is the node agent that runs on a provider's GPU host, and
// the wire types it shares with the server. The agent only makes outbound
// HTTPS requests: heartbeats with inventory and health, a long-poll for
// tasks, and task results. It imports gpu only (never models or market).
package agent

import (
	"encoding/json"
	"strconv"
	"time"

	"suanli/gpu"
)

// Protocol paths on the server.
const (
	PathHeartbeat = "/agent/v1/heartbeat"
	PathTasks     = "/agent/v1/tasks"           // GET ?wait=SECONDS: long-poll
	PathResult    = "/agent/v1/tasks/%d/result" // POST
	// PathProgress takes a Progress while a task runs (an image pull).
	PathProgress = "/agent/v1/tasks/%d/progress" // POST
)

// The most the server reads of a heartbeat and of a task result; a
// larger body is refused (413). A result carries at most
// MaxTelemetrySamples telemetry samples (~4 MB).
const (
	MaxHeartbeatBytes = 1 << 20
	MaxResultBytes    = 8 << 20
)

// Heartbeat is what the agent sends every few seconds. The first one may
// carry a one-time registration token (as the bearer token); the reply
// then holds the node credential to use from then on.
type Heartbeat struct {
	AgentVersion string   `json:"agent_version"`
	Hostname     string   `json:"hostname"`
	Launcher     string   `json:"launcher"` // "docker", "script" or "simulated"
	Host         gpu.Host `json:"host"`
	// PingURL is the public URL of the agent's latency endpoint, if any.
	PingURL string `json:"ping_url,omitempty"`
	// Images are the container images present on the host (docker
	// launcher), so the server can prefer nodes that need no pull.
	Images []LocalImage `json:"images,omitempty"`
	// VolumeRoot is the agent's --volume-root: set, volumes are
	// directories under a path the provider says every node of the
	// datacentre mounts (shared storage); empty, they are docker volumes
	// on this node's disk (local storage).
	VolumeRoot string    `json:"volume_root,omitempty"`
	SentAt     time.Time `json:"sent_at"`
}

// LocalImage is a container image present on the host.
type LocalImage struct {
	// Refs are its repository:tag names.
	Refs []string `json:"refs"`
	// ID is the image id (sha256:…).
	ID        string `json:"id"`
	SizeBytes int64  `json:"size_bytes"`
	// CUDAVersion is the image's CUDA_VERSION environment ("" if none):
	// the CUDA runtime it was built for.
	CUDAVersion string `json:"cuda_version,omitempty"`
}

// HeartbeatReply is the server's answer to a heartbeat.
type HeartbeatReply struct {
	NodeID int64 `json:"node_id"`
	// Credential is set only in the reply to the registration heartbeat:
	// the bearer token for every later request. The server keeps its hash.
	Credential string `json:"credential,omitempty"`
	// IntervalSeconds is how often to send heartbeats.
	IntervalSeconds int `json:"interval_seconds"`
}

// Task kinds.
const (
	TaskVerify = "verify" // run the NVML checks on exactly these GPUs
	TaskLaunch = "launch" // start the workload on these GPUs
	TaskStop   = "stop"   // stop the workload (the volume is kept)
	// TaskDeleteVolume removes a volume (and any container of the task's
	// rental still using it), really, on the node.
	TaskDeleteVolume = "delete_volume"
	// TaskClearXIDs forgets the critical XIDs seen on the task's GPUs (in
	// memory and in the state file), once an operator has dealt with them
	// (`suanli admin clear-xids`): until then they keep the GPUs unhealthy.
	TaskClearXIDs = "clear_xids"
)

// Task is work for the agent.
type Task struct {
	ID       int64    `json:"id"`
	Kind     string   `json:"kind"`
	GPUUUIDs []string `json:"gpu_uuids"`
	RentalID int64    `json:"rental_id,omitempty"`
	// WorkspaceID names the renter's workspace; it stays the same when a
	// rental moves to another node, so the workload resumes there.
	WorkspaceID  string `json:"workspace_id,omitempty"`
	SSHPublicKey string `json:"ssh_public_key,omitempty"`
	// Image is the container image reference to run (docker launcher);
	// the server resolves catalogue slugs before sending it.
	Image string `json:"image,omitempty"`
	// RegistryAuth is the base64url JSON registry credential for pulling
	// a renter's private image (Docker's X-Registry-Auth), if any.
	RegistryAuth string `json:"registry_auth,omitempty"`
	// Env is the renter's environment for the container (a launcher's
	// "env"), and Onstart the renter's script the container runs once
	// it has started (a launcher's "onstart"). Like RegistryAuth they
	// may hold secrets, so the server adds them only when it hands the
	// launch task out; agent_tasks.payload holds neither.
	Env     map[string]string `json:"env,omitempty"`
	Onstart string            `json:"onstart,omitempty"`
	// VolumeGB is the size of the rental's volume (WorkspaceID names it);
	// the launcher applies it as a quota where the storage allows.
	VolumeGB int `json:"volume_gb,omitempty"`
	// Limits are the container's CPU, memory and shm limits (launch).
	Limits *Limits `json:"limits,omitempty"`
	// PullAlways pulls Image even when the node has it: the node's copy
	// was pulled with another renter's registry credentials, and this
	// launch may use it only if the registry agrees (with RegistryAuth, or
	// without when the image is public).
	PullAlways bool `json:"pull_always,omitempty"`
	// NoGPU launches the container without any GPU (无卡模式); GPUUUIDs
	// is then empty.
	NoGPU bool `json:"no_gpu,omitempty"`
	// GraceSeconds, on a stop task, is how long the workload has between
	// its stop signal and being killed (an interrupted rental's grace);
	// zero stops it at once.
	GraceSeconds int `json:"grace_seconds,omitempty"`
	// Nominal is sent with a benchmark task.
	Nominal *Nominal `json:"nominal,omitempty"`
	// Verify, on a launch task, is the verifier's endpoint and
	// rental-scoped credential (added when the task is handed out).
	Verify *Verify `json:"verify,omitempty"`
}

// Limits are a container's resource limits, from the offer.
type Limits struct {
	CPUs      int   `json:"cpus,omitempty"`
	MemoryMiB int64 `json:"memory_mib,omitempty"`
	ShmMiB    int64 `json:"shm_mib,omitempty"`
}

// Progress is what a running task reports before its result: Stage
// "pull" with Pct 0–100 while an image is pulled.
type Progress struct {
	Stage  string `json:"stage"`
	Pct    int    `json:"pct"`
	Detail string `json:"detail,omitempty"`
}

// Tasks is the long-poll's answer (empty when the wait ran out).
type Tasks struct {
	Tasks []Task `json:"tasks"`
}

// Access is how the renter reaches a launched workload.
type Access struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	User    string `json:"user"`
	Command string `json:"command"` // e.g. "ssh -p 22001 root@203.0.113.7"
	// Simulated is true on a simulated agent: its GPUs are simulated
	// devices. With Container unset nothing really runs (the simulated
	// launcher hands out details of a host that does not exist).
	Simulated bool `json:"simulated"`
	// Container is true when a real container runs (the docker launcher,
	// on simulated GPUs too: then without a GPU).
	Container bool `json:"container,omitempty"`
	// Jupyter is set when the image has Jupyter and the launcher started
	// it in the container: it listens on the container's loopback only
	// (no port on the host), for the agent's tunnel to reach. Its token
	// stays on the node (the tunnel's end at the agent adds it), so it is
	// not here.
	Jupyter *Jupyter `json:"jupyter,omitempty"`
}

// Jupyter is the Jupyter server a launcher started in a rental's
// container.
type Jupyter struct {
	// Port is its port on the container's 127.0.0.1.
	Port int `json:"port"`
	// Kind is "lab" (JupyterLab) or "notebook" (the classic Notebook).
	// It serves under JupyterBaseURL.
	Kind string `json:"kind"`
}

// Kinds of Jupyter servers (Jupyter.Kind).
const (
	JupyterLab      = "lab"
	JupyterNotebook = "notebook"
)

// JupyterBaseURL is the path a rental's Jupyter serves under, in the
// container and on the marketplace: /rentals/{id}/jupyter/. Being the
// same, a proxy passes paths (and Jupyter's own links) through unchanged.
func JupyterBaseURL(rentalID int64) string {
	return "/rentals/" + strconv.FormatInt(rentalID, 10) + "/jupyter/"
}

// Result is the outcome of a task.
type Result struct {
	OK bool `json:"ok"`
	// Error says why the task failed (OK false).
	Error string `json:"error,omitempty"`
	// Verdicts are the health verdicts of the task's GPUs by UUID (verify).
	Verdicts map[string]gpu.Verdict `json:"verdicts,omitempty"`
	// Access is set by a successful launch.
	Access *Access `json:"access,omitempty"`
	// Detail carries anything else the task produced.
	Detail json.RawMessage `json:"detail,omitempty"`
}

// ParseAccess decodes stored access details (nil for none, or what does
// not decode).
func ParseAccess(raw string) *Access {
	if raw == "" {
		return nil
	}
	var a Access
	if json.Unmarshal([]byte(raw), &a) != nil {
		return nil
	}
	return &a
}
