package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The deployment files are checked without Docker or Kubernetes (neither
// runs on the CI machine): docker-compose.yml and deploy/k8s/*.yaml parse,
// every suanli command in them is a real subcommand with real flags (the
// built binary's -h lists them), every environment variable given to a
// suanli container is one the binary reads, and the pieces the issue asks
// for are there: PostgreSQL, a migration step, two web replicas behind a
// proxy, a worker, a simulated agent; probes on /readyz and /healthz, a
// migration Job, the Stripe and SMTP Secret, and an agent DaemonSet on the
// NVIDIA runtime with a hostPath state file and the docker socket.
func TestDeployFiles(t *testing.T) {
	known := knownEnv(t)
	var cmds *suanliCommands
	if !testing.Short() {
		cmds = &suanliCommands{bin: buildSuanli(t), flags: map[string][]string{}}
	}

	t.Run("compose", func(t *testing.T) { checkCompose(t, known, cmds) })
	t.Run("kubernetes", func(t *testing.T) { checkKubernetes(t, known, cmds) })
}

// --- docker-compose.yml -----------------------------------------------

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Configs  map[string]struct {
		Content string `yaml:"content"`
	} `yaml:"configs"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Entrypoint  stringOrList      `yaml:"entrypoint"`
	Command     stringOrList      `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Volumes []string `yaml:"volumes"`
	Ports   []string `yaml:"ports"`
	Configs []struct {
		Source, Target string
	} `yaml:"configs"`
}

// stringOrList is a compose command: a list, or one string for a shell.
type stringOrList []string

func (s *stringOrList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = strings.Fields(n.Value)
		return nil
	}
	var l []string
	err := n.Decode(&l)
	*s = l
	return err
}

func checkCompose(t *testing.T, known map[string]bool, cmds *suanliCommands) {
	raw, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, want := range []string{"postgres", "migrate", "web-1", "web-2", "worker", "proxy", "agent"} {
		if _, ok := f.Services[want]; !ok {
			t.Errorf("docker-compose.yml has no %q service", want)
		}
	}
	entrypoint := dockerfileEntrypoint(t)
	invocations := map[string][][]string{} // service → suanli argv's
	for name, s := range f.Services {
		ours := s.Image == "suanli:local"
		if s.Build != nil && !ours {
			t.Errorf("service %s builds the Dockerfile but is not tagged suanli:local", name)
		}
		if !ours {
			continue
		}
		if s.Build != "." {
			t.Errorf("service %s: build %v, want . (the repository's Dockerfile)", name, s.Build)
		}
		for k := range s.Environment {
			if !known[k] {
				t.Errorf("service %s sets %s, which suanli does not read", name, k)
			}
		}
		var argvs [][]string
		if len(s.Entrypoint) == 0 {
			// The image's ENTRYPOINT is the binary: the command is its arguments.
			argvs = [][]string{append([]string{entrypoint}, s.Command...)}
		} else {
			argvs = shellInvocations(strings.Join(append(slices.Clone(s.Entrypoint), s.Command...), " "))
		}
		if len(argvs) == 0 {
			t.Errorf("service %s runs no suanli command", name)
		}
		for _, argv := range argvs {
			cmds.check(t, "compose "+name, argv)
		}
		invocations[name] = argvs
	}
	first := func(name string) []string {
		if l := invocations[name]; len(l) > 0 {
			return l[0]
		}
		return nil
	}
	if a := first("migrate"); len(a) < 2 || a[1] != "migrate" {
		t.Errorf("the migrate service runs %v, want suanli migrate", a)
	}
	for _, w := range []string{"web-1", "web-2"} {
		a := first(w)
		if len(a) < 2 || a[1] != "serve" || !slices.Contains(a, "--workers=false") {
			t.Errorf("%s runs %v, want suanli serve --workers=false", w, a)
		}
		if c := f.Services[w].DependsOn["migrate"].Condition; c != "service_completed_successfully" {
			t.Errorf("%s does not wait for the migration to finish (condition %q)", w, c)
		}
	}
	if a := first("worker"); len(a) < 2 || a[1] != "work" {
		t.Errorf("the worker runs %v, want suanli work", a)
	}
	a := first("agent")
	if len(a) < 2 || a[1] != "agent" || flagValue(a, "simulate") != "dgxh100" {
		t.Errorf("the agent runs %v, want suanli agent --simulate dgxh100", a)
	} else if _, err := simulated("dgxh100", 0, nil); err != nil {
		t.Errorf("--simulate dgxh100: %v", err)
	}
	if s := f.Services["agent"]; s.Environment["SUANLI_SERVER"] != "http://proxy" || s.Environment["SUANLI_AGENT_STATE"] == "" {
		t.Errorf("the agent must reach the server through the proxy and keep a state file: %v", s.Environment)
	}
	// The one-shot setup makes the node token through the admin command
	// and the provider API.
	var setup strings.Builder
	for _, n := range []string{"provider-setup", "node-setup"} {
		setup.WriteString(strings.Join(f.Services[n].Command, " "))
	}
	for _, want := range []string{"admin create-user", "--provider", "--simulated", "admin token", "/api/v1/provider/datacenters", "/api/v1/provider/nodes"} {
		if !strings.Contains(setup.String(), want) {
			t.Errorf("provider-setup/node-setup do not use %q", want)
		}
	}
	if pg := f.Services["postgres"]; !strings.HasPrefix(pg.Image, "postgres:") {
		t.Errorf("postgres service image %q", pg.Image)
	}
	// The proxy balances both web replicas and checks /readyz.
	var caddy string
	for _, c := range f.Services["proxy"].Configs {
		caddy += f.Configs[c.Source].Content
	}
	for _, want := range []string{"web-1:8080", "web-2:8080", "health_uri /readyz"} {
		if !strings.Contains(caddy, want) {
			t.Errorf("the proxy's Caddyfile lacks %q:\n%s", want, caddy)
		}
	}
	checkRoutes(t, "/readyz", "/healthz", "/api/v1/provider/datacenters", "/api/v1/provider/nodes")
}

// dockerfileEntrypoint is the binary the image runs.
func dockerfileEntrypoint(t *testing.T) string {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("Dockerfile: no exec-form ENTRYPOINT")
	}
	if path.Base(string(m[1])) != "suanli" {
		t.Fatalf("Dockerfile ENTRYPOINT %s is not the suanli binary", m[1])
	}
	return string(m[1])
}

// --- deploy/k8s --------------------------------------------------------

// k8sObject is the part of a manifest the checks read.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	RuntimeClassName string            `yaml:"runtimeClassName"`
	NodeSelector     map[string]string `yaml:"nodeSelector"`
	HostNetwork      bool              `yaml:"hostNetwork"`
	RestartPolicy    string            `yaml:"restartPolicy"`
	Containers       []container       `yaml:"containers"`
	Volumes          []struct {
		Name     string `yaml:"name"`
		HostPath *struct {
			Path string `yaml:"path"`
			Type string `yaml:"type"`
		} `yaml:"hostPath"`
	} `yaml:"volumes"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Ports          []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Resources struct {
		Requests map[string]any `yaml:"requests"`
		Limits   map[string]any `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
}

func checkKubernetes(t *testing.T, known map[string]bool, cmds *suanliCommands) {
	files, err := filepath.Glob("deploy/k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	objs := map[string]k8sObject{} // "Kind/name"
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var node yaml.Node
			if err := dec.Decode(&node); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var o k8sObject
			if err := node.Decode(&o); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var meta struct {
				APIVersion string `yaml:"apiVersion"`
			}
			_ = node.Decode(&meta)
			if o.Kind == "" || meta.APIVersion == "" || o.Metadata.Name == "" {
				t.Errorf("%s: a document without apiVersion, kind or metadata.name", file)
				continue
			}
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	get := func(key string) k8sObject {
		o, ok := objs[key]
		if !ok {
			t.Errorf("no %s in deploy/k8s", key)
		}
		return o
	}

	// Config and Secret: keys are variables suanli reads; the Secret holds
	// the database URL, Stripe's keys, the SMTP settings and the platform key.
	cm, sec := get("ConfigMap/suanli-config"), get("Secret/suanli")
	for k := range cm.Data {
		if !known[k] {
			t.Errorf("ConfigMap suanli-config sets %s, which suanli does not read", k)
		}
	}
	for _, k := range []string{"DATABASE_URL", "STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "SMTP_URL", "SUANLI_SECRET_KEY"} {
		if _, ok := sec.StringData[k]; !ok {
			t.Errorf("Secret suanli lacks %s", k)
		}
	}
	for k := range sec.StringData {
		if !known[k] {
			t.Errorf("Secret suanli holds %s, which suanli does not read", k)
		}
	}

	// Every suanli container: a real command with real flags, known env.
	images := map[string]bool{}
	for key, o := range objs {
		for _, c := range o.Spec.Template.Spec.Containers {
			argvs := containerInvocations(c)
			if len(argvs) == 0 {
				t.Errorf("%s container %s runs no suanli command", key, c.Name)
			}
			for _, argv := range argvs {
				cmds.check(t, key, argv)
			}
			for _, e := range c.Env {
				if !known[e.Name] && !podOnlyEnv[e.Name] {
					t.Errorf("%s sets %s, which suanli does not read", key, e.Name)
				}
			}
			for _, p := range []*probe{c.ReadinessProbe, c.LivenessProbe} {
				if p != nil && p.Exec != nil {
					cmds.check(t, key+" probe", p.Exec.Command)
				}
			}
			if !strings.Contains(c.Image, "suanli-agent") {
				images[c.Image] = true
			}
		}
	}
	if len(images) != 1 {
		t.Errorf("web, worker and the migration Job must run one image (one schema version), got %v", images)
	}

	first := func(key string) (container, []string) {
		o := get(key)
		if len(o.Spec.Template.Spec.Containers) == 0 {
			t.Errorf("%s has no container", key)
			return container{}, nil
		}
		c := o.Spec.Template.Spec.Containers[0]
		argvs := containerInvocations(c)
		if len(argvs) == 0 {
			return c, nil
		}
		return c, argvs[0]
	}

	web, argv := first("Deployment/suanli-web")
	if len(argv) < 2 || argv[1] != "serve" || !slices.Contains(argv, "--workers=false") {
		t.Errorf("the web Deployment runs %v, want suanli serve --workers=false", argv)
	}
	if p := web.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Error("the web Deployment's readiness probe is not GET /readyz")
	}
	if p := web.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Error("the web Deployment's liveness probe is not GET /healthz")
	}
	if addr := flagValue(argv, "addr"); addr != "" && (len(web.Ports) == 0 || ":"+strconv.Itoa(web.Ports[0].ContainerPort) != addr) {
		t.Errorf("the web container listens on %s but declares ports %v", addr, web.Ports)
	}
	get("Service/suanli-web")

	worker, argv := first("Deployment/suanli-worker")
	if len(argv) < 2 || argv[1] != "work" {
		t.Errorf("the worker Deployment runs %v, want suanli work", argv)
	}
	if p := worker.ReadinessProbe; p == nil || (p.HTTPGet == nil && p.Exec == nil) {
		t.Error("the worker Deployment has no readiness probe")
	}
	if p := worker.LivenessProbe; p != nil && p.HTTPGet != nil && (p.HTTPGet.Path != "/healthz" || flagValue(argv, "metrics-addr") == "") {
		t.Errorf("the worker's liveness probe GET %s needs --metrics-addr (its /healthz)", p.HTTPGet.Path)
	}

	job := get("Job/suanli-migrate")
	if _, argv := first("Job/suanli-migrate"); len(argv) < 2 || !slices.Equal(argv[1:], []string{"migrate"}) {
		t.Errorf("the migration Job runs %v, want suanli migrate", argv)
	}
	if rp := job.Spec.Template.Spec.RestartPolicy; rp != "Never" && rp != "OnFailure" {
		t.Errorf("the migration Job's restartPolicy is %q", rp)
	}

	// The agent DaemonSet: NVIDIA runtime on GPU nodes, outbound only, a
	// hostPath for its state file, the docker socket for the docker launcher.
	ds := get("DaemonSet/suanli-agent").Spec.Template.Spec
	agent, argv := first("DaemonSet/suanli-agent")
	if len(argv) < 2 || argv[1] != "agent" {
		t.Errorf("the agent DaemonSet runs %v, want suanli agent", argv)
	}
	if ds.RuntimeClassName != "nvidia" {
		t.Errorf("the agent's runtimeClassName is %q, want nvidia", ds.RuntimeClassName)
	}
	if ds.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("the agent's nodeSelector %v does not pick GPU nodes", ds.NodeSelector)
	}
	if ds.HostNetwork {
		t.Error("the agent only calls out: it needs no hostNetwork")
	}
	env := map[string]string{}
	for _, e := range agent.Env {
		env[e.Name] = e.Value
	}
	if env["NVIDIA_VISIBLE_DEVICES"] != "all" {
		t.Error("the agent must see every GPU of its node (NVIDIA_VISIBLE_DEVICES=all)")
	}
	if _, ok := agent.Resources.Limits["nvidia.com/gpu"]; ok {
		t.Error("the agent must not take GPUs from the scheduler (no nvidia.com/gpu resources)")
	}
	hostPaths := map[string]string{}
	for _, v := range ds.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	mounts := map[string]string{}
	for _, m := range agent.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	state := cmpOr(flagValue(argv, "state-file"), env["SUANLI_AGENT_STATE"])
	if state == "" || hostPaths[mounts[path.Dir(state)]] == "" {
		t.Errorf("the agent's state file %q is not on a hostPath volume", state)
	}
	if env["SUANLI_SERVER"] == "" && flagValue(argv, "server") == "" {
		t.Error("the agent is not told the server")
	}
	if flagValue(argv, "launcher") == "docker" && hostPaths[mounts["/var/run/docker.sock"]] != "/var/run/docker.sock" {
		t.Error("the docker launcher needs the host's /var/run/docker.sock mounted")
	}
}

// podOnlyEnv are variables a pod sets for its shell or the NVIDIA runtime,
// not for suanli.
var podOnlyEnv = map[string]bool{"NODE_NAME": true, "NODE_IP": true, "NVIDIA_VISIBLE_DEVICES": true, "NVIDIA_DRIVER_CAPABILITIES": true}

// containerInvocations are the suanli argv's a container runs: the image's
// entrypoint with args, or the suanli commands of a shell script.
func containerInvocations(c container) [][]string {
	if len(c.Command) == 0 {
		return [][]string{append([]string{"/usr/local/bin/suanli"}, c.Args...)}
	}
	return shellInvocations(strings.Join(append(slices.Clone(c.Command), c.Args...), " "))
}

// --- commands, flags and variables ----------------------------------

// shellInvocations finds the suanli commands in a shell script: each
// argv starts at a word "suanli" and runs to the end of its simple
// command. Quotes are removed; $(…) and variables stay as written.
func shellInvocations(script string) [][]string {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var out [][]string
	for _, line := range strings.Split(script, "\n") {
		words := shellWords(line)
		for i := 0; i < len(words); i++ {
			if path.Base(words[i]) != "suanli" || (i > 0 && !slices.Contains([]string{"exec", "&&", ";", "||", "-c", "/bin/sh", "sh"}, words[i-1])) {
				continue
			}
			j := i + 1
			for j < len(words) && !slices.Contains([]string{"&&", "||", ";", "|", ">", ">>", "<"}, words[j]) {
				j++
			}
			out = append(out, words[i:j])
			i = j
		}
	}
	return out
}

// shellWords splits a line into words, honouring single and double quotes
// and treating $(…) as part of a word.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in := false
	var quote rune
	depth := 0
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote && depth == 0 {
				quote = 0
			} else {
				cur.WriteRune(r)
				if r == '(' {
					depth++
				} else if r == ')' && depth > 0 {
					depth--
				}
			}
			in = true
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '(':
			depth++
			cur.WriteRune(r)
			in = true
		case r == ')':
			depth = max(depth-1, 0)
			cur.WriteRune(r)
		case (r == ' ' || r == '\t') && depth == 0:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// flagValue is the value of --name in argv (--name=v or --name v).
func flagValue(argv []string, name string) string {
	for i, a := range argv {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(argv) && strings.HasPrefix(argv[i], "-") {
			return argv[i+1]
		}
	}
	return ""
}

// suanliCommands checks argv's against the built binary's help; nil (under
// -short, where the binary is not built) checks nothing.
type suanliCommands struct {
	bin   string
	mu    sync.Mutex
	flags map[string][]string // "serve", "admin token" → flag names
}

var subcommands = []string{"serve", "work", "agent", "migrate", "seed", "admin"}

func (c *suanliCommands) check(t *testing.T, where string, argv []string) {
	t.Helper()
	if c == nil {
		return
	}
	if len(argv) < 2 || !slices.Contains(subcommands, argv[1]) {
		t.Errorf("%s: %v is not a suanli subcommand (%v)", where, argv, subcommands)
		return
	}
	cmd, rest := argv[1:2], argv[2:]
	if argv[1] == "admin" {
		if len(rest) == 0 {
			t.Errorf("%s: suanli admin without a command", where)
			return
		}
		cmd, rest = argv[1:3], argv[3:]
	}
	known := c.help(t, cmd)
	if known == nil {
		t.Errorf("%s: suanli %s is not a command (its -h lists no flags)", where, strings.Join(cmd, " "))
		return
	}
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(known, name) {
			t.Errorf("%s: suanli %s has no flag -%s (it has %v)", where, strings.Join(cmd, " "), name, known)
		}
	}
}

var helpFlag = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)

func (c *suanliCommands) help(t *testing.T, cmd []string) []string {
	key := strings.Join(cmd, " ")
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.flags[key]; ok {
		return f
	}
	out, _ := exec.Command(c.bin, append(slices.Clone(cmd), "-h")...).CombinedOutput() // -h exits non-zero
	var names []string
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	c.flags[key] = names
	if names == nil {
		t.Logf("suanli %s -h:\n%s", key, out)
	}
	return names
}

// knownEnv is every environment variable the binary reads: the config
// package's env*("NAME", …) defaults and the commands' os.Getenv("NAME").
func knownEnv(t *testing.T) map[string]bool {
	files, _ := filepath.Glob("*.go")
	files = append(files, "config/config.go")
	re := regexp.MustCompile(`(?:\benv[A-Za-z]*|os\.Getenv|os\.LookupEnv)\("([A-Z][A-Z0-9_]+)"`)
	known := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(raw, -1) {
			known[string(m[1])] = true
		}
	}
	for _, must := range []string{"DATABASE_URL", "SUANLI_BASE_URL", "STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "SMTP_URL", "SUANLI_SERVER", "SUANLI_AGENT_STATE"} {
		if !known[must] {
			t.Fatalf("%s is not read by the binary any more (found %d variables): update the deploy files and this test", must, len(known))
		}
	}
	return known
}

// checkRoutes checks that the router serves these paths.
func checkRoutes(t *testing.T, paths ...string) {
	raw, err := os.ReadFile("web/routes.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if !bytes.Contains(raw, []byte(`"`+p+`"`)) {
			t.Errorf("web/routes.go has no route %s", p)
		}
	}
}
