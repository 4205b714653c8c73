package workers_test

import (
	"context"
	"encoding/base64"
	"io"
	"mime"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/models"
	"suanli/workers"

	smail "suanli/mail"
)

// inbox is a real SMTP server (emersion/go-smtp) that keeps what it receives.
type inbox struct {
	mu   sync.Mutex
	msgs []*mail.Message
	rcpt []string
}

func (b *inbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{b: b}, nil }

type session struct {
	b  *inbox
	to string
}

func (s *session) Reset()                                    {}
func (s *session) Logout() error                             { return nil }
func (s *session) Mail(string, *smtp.MailOptions) error      { return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error { s.to = to; return nil }
func (s *session) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(m.Body)
	m.Body = strings.NewReader(string(body))
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.msgs = append(s.b.msgs, m)
	s.b.rcpt = append(s.b.rcpt, s.to)
	return nil
}

func startSMTP(t *testing.T) (*inbox, string) {
	b := &inbox{}
	srv := smtp.NewServer(b)
	srv.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b, ln.Addr().String()
}

// With SMTP configured the outbox is delivered by the queue, in the
// recipient's language, and each message once.
func TestMailIsDeliveredOverSMTP(t *testing.T) {
	b, addr := startSMTP(t)
	db := dbtest.SQLite(t)
	ctx := context.Background()
	s := &accounts.Service{DB: db, BaseURL: "https://suanli.test"}
	if _, err := s.SignUp(ctx, accounts.SignUpInput{Email: "li.wei@example.com", Password: "tianfu-gpu-2026!", Name: "李伟", Lang: "zh-CN"}); err != nil {
		t.Fatal(err)
	}
	sender, err := smail.ParseURL("smtp://" + addr + "?from=noreply@suanli.test")
	if err != nil {
		t.Fatal(err)
	}
	q, err := workers.New(db, workers.Options{Work: true, Mail: sender})
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := q.Inserter.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)
	timeout := time.After(30 * time.Second)
wait:
	for {
		select {
		case ev := <-done:
			if ev.Job.Kind == "deliver_mail" && ev.Job.State == rivertype.JobStateCompleted {
				break wait
			}
		case <-timeout:
			t.Fatal("no deliver_mail job completed")
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.msgs) != 1 || b.rcpt[0] != "li.wei@example.com" {
		t.Fatalf("delivered %d messages to %v", len(b.msgs), b.rcpt)
	}
	m := b.msgs[0]
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	raw, _ := io.ReadAll(m.Body)
	body, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(raw), "\r\n", ""))
	if !strings.Contains(subject, "验证") || !strings.Contains(string(body), "https://suanli.test/verify?token=") {
		t.Errorf("subject %q body %q", subject, body)
	}
	unsent, _ := db.UnsentMail(ctx, 10)
	if len(unsent) != 0 {
		t.Errorf("%d messages still unsent", len(unsent))
	}
	var sent []models.OutboxMail
	db.R.Where("sent_at IS NOT NULL").Find(&sent)
	if len(sent) != 1 {
		t.Errorf("%d marked sent", len(sent))
	}
}
