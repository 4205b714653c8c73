package handlers

import (
	"encoding/csv"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/pricing"
)

// CSVAttachment starts a CSV download named filename: status 200, UTF-8
// with a byte order mark (so that spreadsheets read Chinese correctly),
// then the header row. Once it is called an error can no longer become an
// error page, so callers read what they can before.
func CSVAttachment(c echo.Context, filename string, header ...string) (*csv.Writer, error) {
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	res.Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+filename+`"`)
	res.WriteHeader(http.StatusOK)
	if _, err := res.Write([]byte("\uFEFF")); err != nil {
		return nil, err
	}
	w := csv.NewWriter(res)
	return w, w.Write(header)
}

// CSVText keeps a text cell (a memo, a name, an address) from being read
// as a formula by spreadsheets: one that starts with =, +, -, @, a tab or
// a carriage return gets a leading apostrophe.
func CSVText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// CSVYuan writes an amount in fen as signed yuan ("-35.5", "40"), the
// amount columns' form.
func CSVYuan(fen int64) string {
	if fen < 0 {
		return "-" + pricing.FenToYuanString(-fen)
	}
	return pricing.FenToYuanString(fen)
}

// CSVTime writes a time in Asia/Shanghai, the time columns' form.
func CSVTime(t time.Time) string {
	return t.In(pricing.Shanghai).Format("2006-01-02 15:04:05")
}
