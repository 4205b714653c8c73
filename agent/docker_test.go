package agent_test

import (
	"context"
	"encoding/csv"
	"errors"
	"slices"
	"strings"
	"testing"

	"suanli/agent"
)

func TestDockerRunArgs(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE renter@lab"
	tests := []struct {
		name string
		spec agent.LaunchSpec
		want []string
	}{
		{
			name: "one GPU",
			spec: agent.LaunchSpec{RentalID: 7, WorkspaceID: "w42", GPUUUIDs: []string{"GPU-aaaa"}, SSHPublicKey: key},
			want: []string{
				"run", "-d", "--name", "suanli-r7",
				"--gpus", `"device=GPU-aaaa"`,
				"-p", "22007:22",
				"-e", "SSH_PUBLIC_KEY=" + key,
				"-v", "suanli-ws-w42:/workspace",
				"--restart", "unless-stopped",
				"img:1",
			},
		},
		{
			name: "two GPUs stay one --gpus value",
			spec: agent.LaunchSpec{RentalID: 10123, WorkspaceID: "w42", GPUUUIDs: []string{"GPU-aaaa", "GPU-bbbb"}, SSHPublicKey: key},
			want: []string{
				"run", "-d", "--name", "suanli-r10123",
				"--gpus", `"device=GPU-aaaa,GPU-bbbb"`,
				"-p", "22123:22",
				"-e", "SSH_PUBLIC_KEY=" + key,
				"-v", "suanli-ws-w42:/workspace",
				"--restart", "unless-stopped",
				"img:1",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := agent.SSHPort(22000, tt.spec.RentalID)
			got := agent.DockerRunArgs(tt.spec, "img:1", port)
			if !slices.Equal(got, tt.want) {
				t.Errorf("DockerRunArgs =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// docker's CLI reads the --gpus value as one CSV record (docker/cli
// opts/gpus.go); this reads ours the same way and checks that every UUID
// lands in the one "device=" field.
func TestDockerGPUsValueSurvivesDockersCSVParse(t *testing.T) {
	spec := agent.LaunchSpec{RentalID: 1, GPUUUIDs: []string{"GPU-aaaa", "GPU-bbbb", "GPU-cccc"}}
	args := agent.DockerRunArgs(spec, "img", 22001)
	i := slices.Index(args, "--gpus")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("no --gpus in %q", args)
	}
	fields, err := csv.NewReader(strings.NewReader(args[i+1])).Read()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"device=GPU-aaaa,GPU-bbbb,GPU-cccc"}; !slices.Equal(fields, want) {
		t.Errorf("docker would read %q, want %q", fields, want)
	}
}

func TestDockerLauncher(t *testing.T) {
	var calls [][]string
	running := map[string]bool{}
	d := agent.DockerLauncher{
		Host: "203.0.113.7",
		Runner: func(_ context.Context, name string, args ...string) ([]byte, error) {
			calls = append(calls, append([]string{name}, args...))
			switch args[0] {
			case "run":
				running[args[3]] = true
				return []byte("abc123\n"), nil
			case "rm":
				if !running[args[2]] {
					return []byte("Error response from daemon: No such container: " + args[2]), errors.New("exit status 1")
				}
				delete(running, args[2])
			}
			return nil, nil
		},
	}
	spec := agent.LaunchSpec{RentalID: 5, WorkspaceID: "w1", GPUUUIDs: []string{"GPU-aaaa"}}

	acc, err := d.Launch(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Access{Host: "203.0.113.7", Port: 22005, User: "root", Command: "ssh -p 22005 root@203.0.113.7"}
	if *acc != want {
		t.Errorf("access = %+v, want %+v", *acc, want)
	}
	last := calls[len(calls)-1]
	if got := last[len(last)-1]; got != agent.DefaultDockerImage {
		t.Errorf("image = %q, want the default %q", got, agent.DefaultDockerImage)
	}

	t.Run("stop removes the container and keeps the volume", func(t *testing.T) {
		if err := d.Stop(context.Background(), agent.StopSpec{RentalID: 5}); err != nil {
			t.Fatal(err)
		}
		if running["suanli-r5"] {
			t.Error("container still running")
		}
		for _, c := range calls {
			if slices.Contains(c, "volume") {
				t.Errorf("a stop touched the volume: %q", c)
			}
		}
	})
	t.Run("stopping what is not running succeeds", func(t *testing.T) {
		if err := d.Stop(context.Background(), agent.StopSpec{RentalID: 5}); err != nil {
			t.Errorf("second stop: %v", err)
		}
	})
	t.Run("docker run failure carries docker's message", func(t *testing.T) {
		bad := d
		bad.Runner = func(_ context.Context, _ string, args ...string) ([]byte, error) {
			if args[0] == "run" {
				return []byte("docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]."), errors.New("exit status 125")
			}
			return nil, nil
		}
		_, err := bad.Launch(context.Background(), spec)
		if err == nil || !strings.Contains(err.Error(), "could not select device driver") {
			t.Errorf("err = %v, want docker's message", err)
		}
	})
	t.Run("a UUID that would break the --gpus value is refused", func(t *testing.T) {
		_, err := d.Launch(context.Background(), agent.LaunchSpec{RentalID: 6, GPUUUIDs: []string{`GPU-a",all`}})
		if err == nil {
			t.Error("launch accepted a UUID with a quote and a comma")
		}
	})
}
