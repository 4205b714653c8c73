package launch

import (
	"strconv"
	"strings"
	"testing"

	"suanli/apperr"
)

// Every rule of a launch spec refuses with a 400 naming the field at
// fault (labels.KEY, env.NAME, onstart), never repeating a value; specs
// at each limit pass.
func TestSpecRules(t *testing.T) {
	many := func(n int, prefix string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[prefix+strconv.Itoa(i)] = "v"
		}
		return m
	}
	const secret = "s3cr3t-value"
	cases := []struct {
		name  string
		spec  Spec
		field string // "" passes
	}{
		{"empty", Spec{}, ""},
		{"everything at its limit", Spec{Name: strings.Repeat("名", MaxNameLen), Labels: many(MaxLabels, "k"),
			Env: map[string]string{"A_1": strings.Repeat("x", 1000), "_b": ""}, Onstart: strings.Repeat("#", MaxOnstartBytes)}, ""},
		{"a label key of 63", Spec{Labels: map[string]string{"a" + strings.Repeat("b", 62): strings.Repeat("v", MaxLabelValue)}}, ""},
		{"label keys with . _ / -", Spec{Labels: map[string]string{"skypilot.co/cluster-name_1": "c"}}, ""},
		{"a name too long", Spec{Name: strings.Repeat("a", MaxNameLen+1)}, "name"},
		{"a name with a line break", Spec{Name: "a\nb"}, "name"},
		{"too many labels", Spec{Labels: many(MaxLabels+1, "k")}, "labels"},
		{"an upper-case key", Spec{Labels: map[string]string{"Cluster": "x"}}, "labels.Cluster"},
		{"a key with =", Spec{Labels: map[string]string{"a=b": "x"}}, "labels.a=b"},
		{"a key with ,", Spec{Labels: map[string]string{"a,b": "x"}}, "labels.a,b"},
		{"a key starting with .", Spec{Labels: map[string]string{".a": "x"}}, "labels..a"},
		{"an empty key", Spec{Labels: map[string]string{"": "x"}}, "labels."},
		{"a key of 64", Spec{Labels: map[string]string{strings.Repeat("k", 64): "x"}}, "labels." + strings.Repeat("k", 64)},
		{"a value too long", Spec{Labels: map[string]string{"k": strings.Repeat("v", MaxLabelValue+1)}}, "labels.k"},
		{"a value with a tab", Spec{Labels: map[string]string{"k": "a\tb"}}, "labels.k"},
		{"too many variables", Spec{Env: many(MaxEnvVars+1, "V")}, "env"},
		{"a name starting with a digit", Spec{Env: map[string]string{"1A": secret}}, "env.1A"},
		{"a name with -", Spec{Env: map[string]string{"A-B": secret}}, "env.A-B"},
		{"a name of 129", Spec{Env: map[string]string{"A" + strings.Repeat("b", 128): secret}}, "env.A" + strings.Repeat("b", 63) + "…"},
		{"the platform's SUANLI_", Spec{Env: map[string]string{"SUANLI_WITNESS_TOKEN": secret}}, "env.SUANLI_WITNESS_TOKEN"},
		{"the runtime's NVIDIA_", Spec{Env: map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"}}, "env.NVIDIA_VISIBLE_DEVICES"},
		{"NVIDIA_ in lower case", Spec{Env: map[string]string{"nvidia_visible_devices": "all"}}, "env.nvidia_visible_devices"},
		{"a NUL in a value", Spec{Env: map[string]string{"A": "x\x00" + secret}}, "env.A"},
		{"a value that is not UTF-8", Spec{Env: map[string]string{"A": "\xff" + secret}}, "env.A"},
		{"an environment over 32 KiB", Spec{Env: map[string]string{"A": strings.Repeat("x", MaxEnvBytes), "B": secret}}, "env"},
		{"a script over 16 KiB", Spec{Onstart: strings.Repeat("#", MaxOnstartBytes+1)}, "onstart"},
		{"a NUL in the script", Spec{Onstart: "echo " + secret + "\x00"}, "onstart"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.spec.Check()
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.EINVALID || e.Field != c.field {
				t.Fatalf("%v, want invalid on %q", err, c.field)
			}
			if strings.Contains(e.Error(), secret) {
				t.Errorf("the refusal repeats a value: %v", e)
			}
		})
	}
}

// The label filter of the list reads KEY=VALUE (a value may hold "=");
// anything else names label.
func TestParseLabelFilter(t *testing.T) {
	got, err := ParseLabelFilter([]string{"cluster=c1", "role=a=b", "empty="})
	if err != nil || len(got) != 3 || got["cluster"] != "c1" || got["role"] != "a=b" || got["empty"] != "" {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParseLabelFilter(nil); err != nil || got != nil {
		t.Errorf("no filter: %v %v", got, err)
	}
	for _, bad := range [][]string{{"cluster"}, {"Cluster=x"}, {"=x"}, {"k=a", "k=b"}} {
		if _, err := ParseLabelFilter(bad); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("%q: %v, want invalid", bad, err)
		} else if e, _ := apperr.As(err); e.Field != "label" {
			t.Errorf("%q names %q, want label", bad, e.Field)
		}
	}
}

// Instance types read and print as <gpu slug>.<N>x; anything else names
// instance_type.
func TestInstanceTypes(t *testing.T) {
	for _, s := range []string{"h100-sxm.2x", "rtx-4090.1x", "h100-sxm.8x", "a100-80g-sxm.64x"} {
		it, err := ParseInstanceType(s)
		if err != nil || it.String() != s {
			t.Errorf("%q: %+v %v", s, it, err)
		}
	}
	it, _ := ParseInstanceType("h100-sxm.2x")
	if it.GPU != "h100-sxm" || it.GPUs != 2 {
		t.Errorf("h100-sxm.2x is %+v", it)
	}
	for _, s := range []string{"", "h100-sxm", "h100-sxm.2", "h100-sxm.x", "h100-sxm.0x", "h100-sxm.65x", "h100-sxm.02x", "h100-sxm.-1x",
		"nope.2x", ".2x", "h100-sxm.2X", "h100-sxm.2x "} {
		if _, err := ParseInstanceType(s); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("%q: %v, want invalid", s, err)
		} else if e, _ := apperr.As(err); e.Field != "instance_type" {
			t.Errorf("%q names %q", s, e.Field)
		}
	}
}
