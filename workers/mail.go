package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/models"
)

// Sender delivers one message.
type Sender interface {
	Send(to, subject, body string) error
}

// DeliverMailArgs asks for unsent outbox messages to be delivered.
type DeliverMailArgs struct{}

// Kind implements river.JobArgs.
func (DeliverMailArgs) Kind() string { return "deliver_mail" }

// InsertOpts keeps one delivery waiting at a time: a slow SMTP server
// must not pile runs up behind it.
func (DeliverMailArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByPeriod: 5 * time.Second}}
}

// DeliverMailWorker sends unsent outbox messages. A failed message keeps
// its error and is tried again on the next run; one failure does not stop
// the others.
type DeliverMailWorker struct {
	river.WorkerDefaults[DeliverMailArgs]
	DB     *models.DB
	Sender Sender
}

// Work implements river.Worker.
func (w *DeliverMailWorker) Work(ctx context.Context, job *river.Job[DeliverMailArgs]) error {
	ms, err := w.DB.UnsentMail(ctx, 100)
	if err != nil {
		return err
	}
	for _, m := range ms {
		sendErr := w.Sender.Send(m.ToAddr, m.Subject, m.Body)
		if sendErr != nil {
			slog.Warn("mail not delivered", "outbox", m.ID, "err", sendErr)
		}
		if err := w.DB.MarkMailSent(ctx, m.ID, w.DB.Now().UTC(), sendErr); err != nil {
			return err
		}
	}
	return nil
}
