package rentalwatch

import (
	"slices"

	"github.com/labstack/echo/v4"

	"suanli/changefeed"
	"suanli/handlers"
	"suanli/handlers/rentalvm"
	"suanli/models"
	"suanli/views/rentalpages"
)

// usageWatch follows the rental page's GPU usage section on its event
// stream: it subscribes to the rental's GPUs (changefeed.GPU: a new
// telemetry sample) and sends the section again ("usage") when one is
// sampled, reading only the samples (one statement). The stream
// authorised the viewer when it connected, and ends when that may no
// longer hold, so a push does not authorise again.
type usageWatch struct {
	h      *Handler
	c      echo.Context
	rental int64
	// gpus are the GPUs the section shows (the rental holds, or held
	// last), read when the block showed uuids; started once read.
	gpus    []models.GPU
	uuids   []string
	started bool
	// simulated is the block's flag when the section was last read.
	simulated bool
	sub       *changefeed.Subscription
	// seen names the section the page shows (UsageVM.Seen): the page's
	// when the stream connected, then the last one sent.
	seen string
}

// newUsageWatch follows rental's usage section for a page that shows
// the section seen.
func newUsageWatch(h *Handler, c echo.Context, rental int64, seen string) *usageWatch {
	return &usageWatch{h: h, c: c, rental: rental, seen: seen}
}

// C is ready when one of the GPUs was sampled (nil, never ready, while
// it follows none).
func (u *usageWatch) C() <-chan struct{} {
	if u.sub == nil {
		return nil
	}
	return u.sub.C
}

func (u *usageWatch) close() {
	if u.sub != nil {
		u.sub.Close()
	}
}

// follow is called with each block the stream sends. When the stream
// connects, and whenever the block shows other GPUs than the section
// follows, it reads the rental's GPUs and subscribes to them, then reads
// the section and sends it if it is not what the page shows: the samples
// are read after the subscription, so none is missed (a change of the
// rental's GPUs is the rental's, which the block follows). When only the
// block's simulated flag moved, it sends the section again too.
func (u *usageWatch) follow(s *stream, vm rentalpages.RentalVM) error {
	uuids := make([]string, 0, len(vm.GPUs))
	for _, g := range vm.GPUs {
		uuids = append(uuids, g.UUID)
	}
	if u.started && slices.Equal(uuids, u.uuids) {
		if vm.Simulated == u.simulated {
			return nil
		}
		return u.push(s, vm)
	}
	u.started, u.uuids = true, uuids
	gpus, err := u.h.DB.RentalGPUs(u.c.Request().Context(), u.rental)
	if err != nil {
		return err
	}
	keys := make([]changefeed.Key, 0, len(gpus))
	for _, g := range gpus {
		keys = append(keys, changefeed.GPU(g.ID))
	}
	u.close()
	u.sub, u.gpus = nil, gpus
	if len(keys) > 0 {
		u.sub = u.h.Changes.Subscribe(keys...)
	}
	return u.push(s, vm)
}

// push reads the section (its samples: one statement) and sends it when
// it is not what the page shows; vm is the block last sent. A heartbeat
// samples a node's GPUs in one transaction, whose changes the feed
// publishes one by one: a wake-up they left while the samples were read
// is dropped when it tells of nothing the read did not see
// (changefeed.Subscription.Settle), so a heartbeat costs one read.
func (u *usageWatch) push(s *stream, vm rentalpages.RentalVM) error {
	ctx := u.c.Request().Context()
	read := u.h.Changes.Mark()
	us, err := u.h.Rentals.Fleet().RentalUsage(ctx, u.rental, u.gpus)
	if err != nil {
		return err
	}
	if u.sub != nil {
		u.sub.Settle(read)
	}
	u.simulated = vm.Simulated
	uvm := rentalvm.Usage(u.rental, vm.Simulated, vm.Polling(), us)
	seen := uvm.Seen()
	if seen == u.seen {
		return nil
	}
	s.buf.Reset()
	if err := rentalpages.RentalUsage(handlers.ViewCtx(u.c), *uvm).Render(ctx, &s.buf); err != nil {
		return err
	}
	if err := s.event("usage", s.buf.String()); err != nil {
		return err
	}
	u.seen = seen
	return nil
}
