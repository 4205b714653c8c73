package locales

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Msg is a message kept as its catalogue key and arguments instead of as
// text, so that what the platform writes once (a ledger memo, a rental's
// timeline, an audit entry, a GPU check) is read in each reader's
// language. An argument is a string, a number, a Msg (rendered in the
// same language) or a list of those (rendered joined by the language's
// list separator). In JSON it is {"key":"…","args":[…]}, a nested message
// an object of the same shape; the zero Msg is stored as "".
type Msg struct {
	Key  string `json:"key"`
	Args []any  `json:"args,omitempty"`
}

// M makes a message of a catalogue key and its arguments.
func M(key string, args ...any) Msg { return Msg{Key: key, Args: args} }

// linesKey is the message of several lines (Lines).
const linesKey = "msg.lines"

// Lines is several messages as one, a line each: joined by "; " (in
// Chinese "；") as text, one per line where a page lists them (LinesOf).
func Lines(lines ...Msg) Msg { return Msg{Key: linesKey, Args: []any{lines}} }

// LinesOf renders m in lang, a string per line when it is Lines.
func (m Msg) LinesOf(lang string) []string {
	if m.Key != linesKey || len(m.Args) != 1 {
		return []string{m.Text(lang)}
	}
	var out []string
	switch v := m.Args[0].(type) {
	case []Msg:
		for _, x := range v {
			out = append(out, x.Text(lang))
		}
	case []any:
		for _, x := range v {
			out = append(out, fmt.Sprint(renderArg(lang, x)))
		}
	}
	return out
}

// IsZero reports whether m holds no message (a record written before
// messages were stored, or text that is data rather than a message).
func (m Msg) IsZero() bool { return m.Key == "" }

// Text renders m in lang; "" for the zero Msg.
func (m Msg) Text(lang string) string {
	if m.IsZero() {
		return ""
	}
	if m.Key == linesKey {
		return strings.Join(m.LinesOf(lang), T(lang, "msg.lines_sep"))
	}
	format := T(lang, m.Key)
	args := make([]any, len(m.Args))
	for i, a := range m.Args {
		args[i] = renderArg(lang, a)
	}
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, coerce(format, args)...)
}

// Or renders m in lang, or returns fallback when m is zero: the stored
// text of a record from before its message was stored.
func (m Msg) Or(lang, fallback string) string {
	if m.IsZero() {
		return fallback
	}
	return m.Text(lang)
}

// renderArg turns a message or a list into text in lang; other values
// stay as they are for their verbs.
func renderArg(lang string, a any) any {
	switch v := a.(type) {
	case Msg:
		return v.Text(lang)
	case *Msg:
		if v == nil {
			return ""
		}
		return v.Text(lang)
	case []Msg:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = x.Text(lang)
		}
		return strings.Join(parts, T(lang, "msg.list_sep"))
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(renderArg(lang, x))
		}
		return strings.Join(parts, T(lang, "msg.list_sep"))
	case json.Number:
		return v
	}
	return a
}

// coerce converts each argument to what its verb prints: arguments read
// back from JSON are json.Numbers, a whole float may have been stored as
// an integer, and a number may meet %s.
func coerce(format string, args []any) []any {
	out := append([]any(nil), args...)
	for _, sl := range slots(format) {
		if sl.arg < len(out) {
			out[sl.arg] = as(sl.verb, out[sl.arg])
		}
	}
	return out
}

// slot is one verb of a format and the argument it prints.
type slot struct {
	arg  int
	verb byte
}

// slots lists a format's verbs with their arguments (fmt's explicit
// indexes, %[2]s, included).
func slots(format string) []slot {
	var out []slot
	next := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		arg := next
		for i < len(format) && !isVerb(format[i]) {
			if format[i] == '[' {
				end := strings.IndexByte(format[i:], ']')
				if end < 0 {
					return out
				}
				if n, err := strconv.Atoi(format[i+1 : i+end]); err == nil && n > 0 {
					arg = n - 1
				}
				i += end
			}
			i++
		}
		if i >= len(format) {
			break
		}
		out = append(out, slot{arg, format[i]})
		next = arg + 1
	}
	return out
}

func isVerb(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// as converts one argument for a verb.
func as(verb byte, a any) any {
	var f float64
	var isNum bool
	switch v := a.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil && (verb == 'd' || verb == 'x') {
			return n
		}
		f, _ = v.Float64()
		isNum = true
	case int:
		f, isNum = float64(v), true
	case int32:
		f, isNum = float64(v), true
	case int64:
		f, isNum = float64(v), true
	case uint:
		f, isNum = float64(v), true
	case uint32:
		f, isNum = float64(v), true
	case uint64:
		f, isNum = float64(v), true
	case float64:
		f, isNum = v, true
	}
	if !isNum {
		return a
	}
	switch verb {
	case 'd', 'x':
		return int64(f)
	case 'f', 'g', 'e', 'F', 'G', 'E':
		return f
	case 's', 'v', 'q':
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return a
}

// JSON is m as stored: its JSON, or "" for the zero Msg.
func (m Msg) JSON() string {
	if m.IsZero() {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// ParseMsg reads a stored message back; "" or anything that is not one
// gives the zero Msg (the record's text is shown instead).
func ParseMsg(s string) Msg {
	if s == "" {
		return Msg{}
	}
	var m Msg
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return Msg{}
	}
	return m
}

// UnmarshalJSON reads a message with its arguments typed back: numbers as
// json.Number, objects as Msg, arrays as lists.
func (m *Msg) UnmarshalJSON(b []byte) error {
	var raw struct {
		Key  string            `json:"key"`
		Args []json.RawMessage `json:"args"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&raw); err != nil {
		return err
	}
	m.Key, m.Args = raw.Key, nil
	for _, a := range raw.Args {
		v, err := decodeArg(a, 0)
		if err != nil {
			return err
		}
		m.Args = append(m.Args, v)
	}
	return nil
}

// maxDepth bounds how deeply messages and lists nest.
const maxDepth = 4

func decodeArg(b json.RawMessage, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("locales: message nested too deeply")
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("locales: empty argument")
	}
	switch b[0] {
	case '{':
		var m Msg
		if err := m.UnmarshalJSON(b); err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(items))
		for _, it := range items {
			v, err := decodeArg(it, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// Valid reports whether m may be rendered as it came from someone else (a
// node agent is the provider's word): its key and those of its nested
// messages exist in every catalogue under one of the prefixes, take as
// many arguments as they are given, and the arguments are plain (strings
// of at most 200 characters, numbers, messages and lists of them).
func (m Msg) Valid(prefixes ...string) bool { return m.valid(prefixes, 0) }

func (m Msg) valid(prefixes []string, depth int) bool {
	if depth > maxDepth || m.Key == "" {
		return false
	}
	ok := false
	for _, p := range prefixes {
		ok = ok || strings.HasPrefix(m.Key, p)
	}
	if !ok {
		return false
	}
	for _, lang := range Supported {
		if !Has(lang, m.Key) || verbs(T(lang, m.Key)) != len(m.Args) {
			return false
		}
	}
	for _, a := range m.Args {
		if !validArg(a, prefixes, depth) {
			return false
		}
	}
	return true
}

func validArg(a any, prefixes []string, depth int) bool {
	switch v := a.(type) {
	case string:
		return len(v) <= 200
	case json.Number, int, int32, int64, uint, uint32, uint64, float64:
		return true
	case Msg:
		return v.valid(prefixes, depth+1)
	case []Msg:
		for _, x := range v {
			if !x.valid(prefixes, depth+1) {
				return false
			}
		}
		return len(v) <= 64
	case []any:
		for _, x := range v {
			if !validArg(x, prefixes, depth+1) {
				return false
			}
		}
		return len(v) <= 64
	}
	return false
}

// verbs counts the arguments a format takes.
func verbs(format string) int {
	n := 0
	for _, sl := range slots(format) {
		n = max(n, sl.arg+1)
	}
	return n
}

// Value stores m as its JSON ("" for the zero Msg), for database columns.
func (m Msg) Value() (driver.Value, error) { return m.JSON(), nil }

// Scan reads a stored message back (see ParseMsg).
func (m *Msg) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*m = Msg{}
	case string:
		*m = ParseMsg(v)
	case []byte:
		*m = ParseMsg(string(v))
	default:
		return fmt.Errorf("locales: cannot read a message from %T", src)
	}
	return nil
}
