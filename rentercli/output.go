package rentercli

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// shanghai is the zone every time is shown in (the market's: China has
// one zone and no summer time, so a fixed +08:00 is right where the
// system has no zone database).
var shanghai = func() *time.Location {
	if loc, err := time.LoadLocation("Asia/Shanghai"); err == nil {
		return loc
	}
	return time.FixedZone("CST", 8*3600)
}()

// yuan writes fen as ¥1,234.56, a negative amount as −¥2.50 with the
// minus sign U+2212 (both languages write money this way). It copies
// views.Yuan deliberately, to print exactly what the web pages print:
// rentercli may import only apiclient and locales (architecture_test.go),
// so keep the two in step.
func yuan(fen int64) string {
	sign := ""
	if fen < 0 {
		sign, fen = "−", -fen
	}
	whole := strconv.FormatInt(fen/100, 10)
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return sign + "¥" + b.String() + "." + strconv.FormatInt(100+fen%100, 10)[1:]
}

// yuanPtr is yuan, or "—" for no amount.
func yuanPtr(fen *int64) string {
	if fen == nil {
		return "—"
	}
	return yuan(*fen)
}

// shTime writes t in Asia/Shanghai to the minute.
func shTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(shanghai).Format("2006-01-02 15:04")
}

// shTimePtr is shTime, or "—" for no time.
func shTimePtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return shTime(*t)
}

// writeJSON writes v as indented JSON with a final newline: what --json
// prints (the API's own shapes, field for field).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table is a human table: a header and rows of cells, written with
// columns aligned by display width (a Chinese character takes two
// columns on a terminal), numbers and money right-aligned.
type table struct {
	header []string
	// right marks the right-aligned columns.
	right map[int]bool
	rows  [][]string
}

// newTable starts a table with its header; a header cell starting with
// ">" is right-aligned (the ">" is not shown).
func newTable(header ...string) *table {
	t := &table{right: map[int]bool{}}
	for i, h := range header {
		if rest, ok := strings.CutPrefix(h, ">"); ok {
			t.right[i] = true
			h = rest
		}
		t.header = append(t.header, h)
	}
	return t
}

// add appends a row.
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write writes the table, two spaces between columns, no trailing spaces.
func (t *table) write(w io.Writer) error {
	widths := make([]int, len(t.header))
	all := t.rows
	if strings.Join(t.header, "") != "" {
		all = append([][]string{t.header}, t.rows...)
	}
	for _, row := range all {
		for i, c := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], displayWidth(c))
			}
		}
	}
	var b strings.Builder
	for _, row := range all {
		var line strings.Builder
		for i := range widths {
			c := ""
			if i < len(row) {
				c = row[i]
			}
			pad := strings.Repeat(" ", widths[i]-displayWidth(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if t.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// displayWidth is how many terminal columns s takes: East Asian wide and
// fullwidth characters take two.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is 2 for the wide ranges of Unicode's East Asian Width
// (Hangul Jamo, CJK and its punctuation, Hangul syllables, compatibility
// ideographs, vertical and fullwidth forms, the supplementary ideograph
// planes), 0 for combining marks and controls, else 1.
func runeWidth(r rune) int {
	switch {
	case r == utf8.RuneError, r < 0x20, r >= 0x7f && r < 0xa0, r >= 0x300 && r < 0x370, r == 0x200b:
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0x303e, r >= 0x3041 && r <= 0x33ff,
		r >= 0x3400 && r <= 0x4dbf, r >= 0x4e00 && r <= 0x9fff, r >= 0xa000 && r <= 0xa4cf,
		r >= 0xac00 && r <= 0xd7a3, r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f,
		r >= 0xff00 && r <= 0xff60, r >= 0xffe0 && r <= 0xffe6, r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}
