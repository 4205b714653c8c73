// Package mail delivers outbox messages over SMTP.
package mail

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"net/url"
	"strings"
	"time"
)

// SMTP sends mail through one SMTP server.
type SMTP struct {
	Addr string // host:port
	From string
	Auth smtp.Auth // nil without credentials
}

// ParseURL reads smtp://[user:password@]host:port?from=address.
func ParseURL(raw string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "smtp" || u.Host == "" {
		return nil, fmt.Errorf("SMTP_URL: want smtp://[user:password@]host:port?from=address")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "25"
	}
	from := u.Query().Get("from")
	if from == "" || !strings.Contains(from, "@") {
		return nil, fmt.Errorf("SMTP_URL: give the sender as ?from=address")
	}
	s := &SMTP{Addr: net.JoinHostPort(host, port), From: from}
	if u.User != nil {
		pw, _ := u.User.Password()
		// net/smtp refuses PLAIN without TLS except to localhost.
		s.Auth = smtp.PlainAuth("", u.User.Username(), pw, host)
	}
	return s, nil
}

// Send delivers one plain-text message (UTF-8, base64 body), using
// STARTTLS when the server offers it.
func (s *SMTP) Send(to, subject, body string) error {
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\n", s.From, to,
		mime.BEncoding.Encode("utf-8", subject), time.Now().Format(time.RFC1123Z))
	msg.WriteString("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	enc := base64.StdEncoding.EncodeToString([]byte(body))
	for len(enc) > 76 {
		msg.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	msg.WriteString(enc + "\r\n")
	if strings.ContainsAny(to, "\r\n") {
		return fmt.Errorf("bad recipient")
	}
	return smtp.SendMail(s.Addr, s.Auth, s.From, []string{to}, msg.Bytes())
}
