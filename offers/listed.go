package offers

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"suanli/catalog"
	"suanli/models"
	"suanli/pricing"
)

// Listed is an offer as the search shows it: the stored offer's figures,
// its datacentre and provider, its catalogue model and derived figures.
//
// The index holds one per listed offer, so it is compact (176 bytes, one
// small size class, where embedding models.OfferRow took a 512-byte one):
// counts and percentages are narrowed to what the providers' offer
// validation allows (providers.checkOffer), optional prices are a value
// and a flag, the strings offers repeat are one number into a shared
// table, and what offers share (model, datacentre, provider, latency
// table, node report) is a pointer to the one copy. An offer that does not
// fit (a figure outside those ranges, a note too rare to share, images
// named) keeps its whole stored offer beside the record instead. Methods
// read the figures; Offer and Row build the stored offer for the few
// consumers that need all of it.
type Listed struct {
	// ID is the offer's id, NodeID its node's.
	ID, NodeID int64
	// GPU is the offer's catalogue model.
	GPU *catalog.GPUModel
	// Datacenter, Provider and Report (the node's latest benchmark
	// report's headline, nil without one) are shared by every offer of
	// the same one.
	Datacenter *models.Datacenter
	Provider   *models.Provider
	Report     *models.ReportHeadline
	// Interruptible is the offer's floor and clearing price for
	// interruptible renting, nil when it takes no bids; bidKey orders
	// by it (SortInterruptible).
	Interruptible *Interruptible
	// lat maps a city slug to the round-trip time from it in ms: the
	// datacentre's table, shared by its offers.
	lat map[string]float64
	// whole is the stored offer and witness status when the compact
	// fields below cannot hold them (see fits); nil for nearly every offer.
	whole *wholeOffer
	// price is the on-demand list price per GPU-hour in fen; measuredTF
	// the tensor TFLOPS per GPU the node's report measured (measuredTFLOPS:
	// 0 when unmeasured). The price orders derive from them as they sort
	// (priceOf, perTFLOP, measured), rather than being kept per view.
	price      int64
	measuredTF float64
	bidKey     int64
	// The optional prices are valid where flags say so.
	weeklyFen, monthlyFen, floorFen int64
	storageFen, noGPUFen            int64
	// updatedAt is UpdatedAt in Unix nanoseconds (flags: zero, local).
	updatedAt int64
	// uptime is the node's 30-day uptime (flags: hasUptime).
	uptime float64
	// Narrowed to their validated ranges (providers.checkOffer): disk
	// 10–1,000,000 GB, minimum duration up to 30 days, GPUs up to
	// fleet.MaxNodeGPUs, vCPUs up to 256, RAM up to 4096 GB, discounts
	// 0–90 %. Signed, so that a stray negative value round-trips too; a
	// value past the type keeps the whole offer instead (fits).
	minDurationS, diskGB                            int32
	maxGPUs, availableGPUs, vcpuPerGPU, ramGBPerGPU int16
	// strs numbers the offer's strings in the shared table (offerStrings).
	strs                   uint16
	flags                  listedFlags
	offpeakPct, studentPct int8
	// tier is the offer's group in the measured order (MeasuredTier).
	tier MeasuredTier
}

// A Listed never changes once an index holds it: a change to the offer
// makes a new Listed, so views may cache what they derive from one under
// its pointer.

type listedFlags uint16

const (
	fDemo listedFlags = 1 << iota
	fSynthetic
	fAwaitingNode
	fCustomImages
	fHasWeekly
	fHasMonthly
	fHasFloor
	fHasUptime
	fUpdatedZero
	fUpdatedLocal
)

// wholeOffer is what a Listed keeps of an offer the compact fields cannot
// hold.
type wholeOffer struct {
	models.Offer
	witness string
}

// offerStrings are an offer's strings that repeat across offers; the
// index numbers each distinct combination once (a few dozen in all: three
// interconnects, a few SLA tier sets and benchmark statuses).
type offerStrings struct {
	interconnect, status, slaTiers, listingNote, witness string
}

// maxStrings bounds the shared table: a combination past it (a note
// unique to one offer, say) is kept in the offer's wholeOffer instead.
const maxStrings = 4096

// stringTable is the process's shared offerStrings, append-only: readers
// load the list without a lock, writers add under mu.
var stringTable struct {
	mu   sync.Mutex
	num  map[offerStrings]uint16
	list atomic.Pointer[[]offerStrings]
}

func init() {
	stringTable.num = map[offerStrings]uint16{}
	stringTable.list.Store(&[]offerStrings{})
}

// internStrings numbers s in the shared table; false when the table is full.
func internStrings(s offerStrings) (uint16, bool) {
	stringTable.mu.Lock()
	defer stringTable.mu.Unlock()
	if i, ok := stringTable.num[s]; ok {
		return i, true
	}
	list := *stringTable.list.Load()
	if len(list) >= maxStrings {
		return 0, false
	}
	i := uint16(len(list))
	list = append(list, s)
	stringTable.num[s] = i
	stringTable.list.Store(&list)
	return i, true
}

func (o *Listed) strings() *offerStrings { return &(*stringTable.list.Load())[o.strs] }

// fits reports whether r's offer fits the compact fields exactly.
func fits(r *models.OfferRow, m *catalog.GPUModel) bool {
	in := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	o := &r.Offer
	return o.GPUModel == m.Slug && r.Datacenter != nil && o.DatacenterID == r.Datacenter.ID &&
		(r.Provider != nil && o.ProviderID == r.Provider.ID || r.Provider == nil && o.ProviderID == 0) &&
		in(o.MaxGPUs, math.MinInt16, math.MaxInt16) && in(o.AvailableGPUs, math.MinInt16, math.MaxInt16) &&
		in(o.VCPUPerGPU, math.MinInt16, math.MaxInt16) && in(o.RAMGBPerGPU, math.MinInt16, math.MaxInt16) &&
		in(o.DiskGB, math.MinInt32, math.MaxInt32) && in(o.MinDurationS, math.MinInt32, math.MaxInt32) &&
		in(o.OffpeakDiscountPct, math.MinInt8, math.MaxInt8) && in(o.StudentDiscountPct, math.MinInt8, math.MaxInt8) &&
		o.Images == nil
}

// setOffer fills o's offer fields from r's (and its witness status), or
// keeps the whole offer when the compact fields cannot hold it.
func (o *Listed) setOffer(r *models.OfferRow, m *catalog.GPUModel, witness string) {
	off := &r.Offer
	o.ID, o.NodeID = off.ID, off.NodeID
	o.maxGPUs, o.availableGPUs = int16(off.MaxGPUs), int16(off.AvailableGPUs)
	o.vcpuPerGPU, o.ramGBPerGPU = int16(off.VCPUPerGPU), int16(off.RAMGBPerGPU)
	o.diskGB, o.minDurationS = int32(off.DiskGB), int32(off.MinDurationS)
	o.offpeakPct, o.studentPct = int8(off.OffpeakDiscountPct), int8(off.StudentDiscountPct)
	o.storageFen, o.noGPUFen = off.StoragePricePerGBMonthFen, off.NoGPUPricePerHourFen
	for _, p := range []struct {
		v    *int64
		to   *int64
		flag listedFlags
	}{{off.WeeklyPricePerGPUFen, &o.weeklyFen, fHasWeekly}, {off.MonthlyPricePerGPUFen, &o.monthlyFen, fHasMonthly},
		{off.InterruptibleFloorPerGPUHourFen, &o.floorFen, fHasFloor}} {
		if p.v != nil {
			*p.to, o.flags = *p.v, o.flags|p.flag
		}
	}
	for _, b := range []struct {
		on   bool
		flag listedFlags
	}{{off.Demo, fDemo}, {off.Synthetic, fSynthetic}, {off.AwaitingNode, fAwaitingNode}, {off.CustomImages, fCustomImages}} {
		if b.on {
			o.flags |= b.flag
		}
	}
	ok := fits(r, m)
	switch t := off.UpdatedAt; {
	case t.IsZero():
		o.flags |= fUpdatedZero
	case t.Location() == time.Local:
		o.flags |= fUpdatedLocal
		fallthrough
	default:
		o.updatedAt = t.UnixNano()
	}
	// Exact only for a time without a monotonic reading, in UTC or the
	// process's zone, within UnixNano's years: as the database gives them.
	ok = ok && o.UpdatedAt() == off.UpdatedAt
	if ok {
		o.strs, ok = internStrings(offerStrings{interconnect: off.Interconnect, status: off.Status, slaTiers: off.SLATiers,
			listingNote: off.ListingNote, witness: witness})
	}
	if !ok {
		o.whole = &wholeOffer{Offer: *off, witness: witness}
	}
}

// Offer is the stored offer, built for the caller (the index's record is
// compact): its optional prices are the caller's own copies. CreatedAt,
// which nothing the index serves shows, is zero.
func (o *Listed) Offer() models.Offer {
	if w := o.whole; w != nil {
		off := w.Offer
		for _, p := range []**int64{&off.WeeklyPricePerGPUFen, &off.MonthlyPricePerGPUFen, &off.InterruptibleFloorPerGPUHourFen} {
			if *p != nil {
				*p = new(**p)
			}
		}
		return off
	}
	s := o.strings()
	return models.Offer{
		ID: o.ID, ProviderID: o.ProviderID(), NodeID: o.NodeID, DatacenterID: o.Datacenter.ID, GPUModel: o.GPU.Slug,
		MaxGPUs: int(o.maxGPUs), VCPUPerGPU: int(o.vcpuPerGPU), RAMGBPerGPU: int(o.ramGBPerGPU), DiskGB: int(o.diskGB),
		Interconnect: s.interconnect, PricePerGPUHourFen: o.price,
		WeeklyPricePerGPUFen: o.WeeklyPricePerGPUFen(), MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen(),
		OffpeakDiscountPct: int(o.offpeakPct), StudentDiscountPct: int(o.studentPct), AvailableGPUs: int(o.availableGPUs),
		Status: s.status, Demo: o.Demo(), Synthetic: o.Synthetic(), UpdatedAt: o.UpdatedAt(),
		MinDurationS: int(o.minDurationS), SLATiers: s.slaTiers, AwaitingNode: o.flags&fAwaitingNode != 0,
		ListingNote: s.listingNote, CustomImages: o.CustomImages(),
		StoragePricePerGBMonthFen: o.storageFen, NoGPUPricePerHourFen: o.noGPUFen,
		InterruptibleFloorPerGPUHourFen: o.optional(o.floorFen, fHasFloor),
	}
}

// Row is the offer joined with what the list shows about it, as the
// database would give it (see Offer), built for the caller.
func (o *Listed) Row() models.OfferRow {
	return models.OfferRow{Offer: o.Offer(), Datacenter: o.Datacenter, Provider: o.Provider, Latency: o.lat,
		Report: o.Report, Uptime30dPct: o.Uptime30dPct()}
}

func (o *Listed) optional(v int64, f listedFlags) *int64 {
	if o.flags&f == 0 {
		return nil
	}
	return &v
}

// ProviderID is the offer's provider's id.
func (o *Listed) ProviderID() int64 {
	switch {
	case o.whole != nil:
		return o.whole.ProviderID
	case o.Provider == nil:
		return 0
	}
	return o.Provider.ID
}

// DatacenterID is the offer's datacentre's id.
func (o *Listed) DatacenterID() int64 {
	if o.whole != nil {
		return o.whole.DatacenterID
	}
	return o.Datacenter.ID
}

// GPUModel is the offer's catalogue model's slug.
func (o *Listed) GPUModel() string { return o.GPU.Slug }

// MaxGPUs is the most GPUs one rental may take.
func (o *Listed) MaxGPUs() int {
	if o.whole != nil {
		return o.whole.MaxGPUs
	}
	return int(o.maxGPUs)
}

// AvailableGPUs is how many of the offer's GPUs are free.
func (o *Listed) AvailableGPUs() int {
	if o.whole != nil {
		return o.whole.AvailableGPUs
	}
	return int(o.availableGPUs)
}

// VCPUPerGPU is the vCPUs a rental gets per GPU.
func (o *Listed) VCPUPerGPU() int {
	if o.whole != nil {
		return o.whole.VCPUPerGPU
	}
	return int(o.vcpuPerGPU)
}

// RAMGBPerGPU is the RAM a rental gets per GPU, in GB.
func (o *Listed) RAMGBPerGPU() int {
	if o.whole != nil {
		return o.whole.RAMGBPerGPU
	}
	return int(o.ramGBPerGPU)
}

// DiskGB is the offer's disk, in GB (0: not stated).
func (o *Listed) DiskGB() int {
	if o.whole != nil {
		return o.whole.DiskGB
	}
	return int(o.diskGB)
}

// MaxVolumeGB is the largest volume the offer takes (MaxVolumeGBOf).
func (o *Listed) MaxVolumeGB() int {
	if d := o.DiskGB(); d > 0 {
		return min(MaxVolumeGB, d)
	}
	return MaxVolumeGB
}

// Interconnect is the offer's interconnect (catalog.Interconnect…).
func (o *Listed) Interconnect() string {
	if o.whole != nil {
		return o.whole.Interconnect
	}
	return o.strings().interconnect
}

// Status is the offer's listing status.
func (o *Listed) Status() string {
	if o.whole != nil {
		return o.whole.Status
	}
	return o.strings().status
}

// WitnessStatus is the benchmark status of the offer's report judged
// with its node's independent witnesses (see Index.Judge); "" when none
// has measured, and the report's own status stands.
func (o *Listed) WitnessStatus() string {
	if o.whole != nil {
		return o.whole.witness
	}
	return o.strings().witness
}

// PricePerGPUHourFen is the on-demand list price per GPU-hour.
func (o *Listed) PricePerGPUHourFen() int64 { return o.price }

// WeeklyPricePerGPUFen is the price of a GPU for a week, nil when the
// offer sells no week; the pointer is the caller's.
func (o *Listed) WeeklyPricePerGPUFen() *int64 {
	if o.whole != nil {
		return copyOf(o.whole.WeeklyPricePerGPUFen)
	}
	return o.optional(o.weeklyFen, fHasWeekly)
}

// MonthlyPricePerGPUFen is the price of a GPU for a month, nil when the
// offer sells no month; the pointer is the caller's.
func (o *Listed) MonthlyPricePerGPUFen() *int64 {
	if o.whole != nil {
		return copyOf(o.whole.MonthlyPricePerGPUFen)
	}
	return o.optional(o.monthlyFen, fHasMonthly)
}

// sellsMonth reports whether the offer has a monthly price.
func (o *Listed) sellsMonth() bool {
	if o.whole != nil {
		return o.whole.MonthlyPricePerGPUFen != nil
	}
	return o.flags&fHasMonthly != 0
}

func copyOf(p *int64) *int64 {
	if p == nil {
		return nil
	}
	return new(*p)
}

// OffpeakDiscountPct is the offer's off-peak discount in percent.
func (o *Listed) OffpeakDiscountPct() int {
	if o.whole != nil {
		return o.whole.OffpeakDiscountPct
	}
	return int(o.offpeakPct)
}

// StudentDiscountPct is the offer's student discount in percent.
func (o *Listed) StudentDiscountPct() int {
	if o.whole != nil {
		return o.whole.StudentDiscountPct
	}
	return int(o.studentPct)
}

// Demo reports whether the offer is demo data.
func (o *Listed) Demo() bool { return o.flags&fDemo != 0 }

// Synthetic reports whether the offer is synthetic (load-test) data.
func (o *Listed) Synthetic() bool { return o.flags&fSynthetic != 0 }

// CustomImages reports whether renters may run their own image.
func (o *Listed) CustomImages() bool { return o.flags&fCustomImages != 0 }

// UpdatedAt is when the offer last changed.
func (o *Listed) UpdatedAt() time.Time {
	switch {
	case o.whole != nil:
		return o.whole.UpdatedAt
	case o.flags&fUpdatedZero != 0:
		return time.Time{}
	case o.flags&fUpdatedLocal != 0:
		return time.Unix(0, o.updatedAt)
	}
	return time.Unix(0, o.updatedAt).UTC()
}

// StoragePricePerGBMonthFen is the price of a GB of volume for 30 days.
func (o *Listed) StoragePricePerGBMonthFen() int64 { return o.storageFen }

// NoGPUPricePerHourFen is the hourly price of the container without GPUs.
func (o *Listed) NoGPUPricePerHourFen() int64 { return o.noGPUFen }

// Latency maps a city slug to the round-trip time from it in ms; the map
// is the datacentre's, shared: read only.
func (o *Listed) Latency() map[string]float64 { return o.lat }

// LatencyFrom returns the published latency from city in ms.
func (o *Listed) LatencyFrom(city string) (float64, bool) {
	ms, ok := o.lat[city]
	return ms, ok
}

// Uptime30dPct is the node's uptime over the last 30 days, nil until the
// reliability job has computed it; the pointer is the caller's.
func (o *Listed) Uptime30dPct() *float64 {
	if o.flags&fHasUptime == 0 {
		return nil
	}
	return new(o.uptime)
}

// uptimeKey is the node's 30-day uptime as shown (UptimeShown), -1 when
// unknown: what the reliability order sorts by.
func (o *Listed) uptimeKey() float64 {
	if o.flags&fHasUptime == 0 {
		return -1
	}
	return UptimeShown(o.uptime)
}

// PricePerTFLOPFen is the on-demand price per GPU-hour divided by the
// model's nominal tensor TFLOPS (BF16, or FP16 without BF16).
func (o *Listed) PricePerTFLOPFen() float64 { return o.perTFLOP(listView) }

// PricePerMeasuredTFLOPFen is the same price divided by the tensor
// TFLOPS per GPU that the node's latest benchmark report measured; 0
// when there is no report or it lacks the figure.
func (o *Listed) PricePerMeasuredTFLOPFen() float64 {
	if o.tier == TierUnmeasured {
		return 0
	}
	return o.measured(listView)
}

// priceOf is the on-demand price per GPU-hour in view v: the list
// price, or the student price (the offer's own student discount off it).
func (o *Listed) priceOf(v priceView) int64 {
	return o.UnitPriceFen(pricing.OnDemand, v == studentView)
}

// perTFLOP is the price in view v over the model's nominal tensor TFLOPS.
func (o *Listed) perTFLOP(v priceView) float64 {
	return float64(o.priceOf(v)) / o.GPU.TensorTFLOPS()
}

// measured is the price in view v over the measured tensor TFLOPS, or
// perTFLOP for an unmeasured offer (which sorts after every measured one).
func (o *Listed) measured(v priceView) float64 {
	if o.measuredTF > 0 {
		return float64(o.priceOf(v)) / o.measuredTF
	}
	return o.perTFLOP(v)
}

// UnitPriceFen is UnitPriceFen of the offer: what one GPU costs a renter
// per unit of term, the student discount applied for student.
func (o *Listed) UnitPriceFen(term pricing.Term, student bool) int64 {
	if o.whole != nil {
		return UnitPriceFen(&o.whole.Offer, term, student)
	}
	price := o.PricePerGPUHourFen()
	switch term {
	case pricing.Week, pricing.Month:
		v, f := o.weeklyFen, fHasWeekly
		if term == pricing.Month {
			v, f = o.monthlyFen, fHasMonthly
		}
		if o.flags&f == 0 {
			return 0
		}
		price = v
	}
	if student {
		return pricing.Discounted(price, o.StudentDiscountPct())
	}
	return price
}

// newListed derives an offer's index record from its row.
func newListed(r *models.OfferRow, m *catalog.GPUModel, running []int64, status string) *Listed {
	o := &Listed{GPU: m, Datacenter: r.Datacenter, Provider: r.Provider, Report: r.Report, lat: r.Latency,
		tier: measuredTierOf(m, r.Report)}
	o.setOffer(r, m, status)
	o.price, o.measuredTF = r.PricePerGPUHourFen, measuredTFLOPS(m, r.Report)
	o.Interruptible = interruptibleOf(&r.Offer, running)
	o.bidKey = bidKey(o.Interruptible)
	if r.Uptime30dPct != nil {
		o.uptime, o.flags = *r.Uptime30dPct, o.flags|fHasUptime
	}
	return o
}
