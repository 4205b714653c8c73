package offers

import (
	"cmp"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"suanli/catalog"
	"suanli/models"
	"suanli/models/supply"
)

// snapshot is one immutable state of the index. A change makes a new
// snapshot that shares every partition, id shard and latency row it did
// not touch with the one before.
type snapshot struct {
	version int64
	n       int // listed offers
	ids     idMap
	// parts[gpu*cityParts+city] holds one model's offers in one city (the
	// last city slot: cities the catalogue does not know), nil when none.
	// Searches over several models or cities merge the partitions' runs.
	parts []*part
	*numbers
	dcIdx map[int64]uint16
	// lat[dc][city] is the published RTT in ms, or -1 when none is published.
	lat [][]float32
	// prices is the snapshot's own (ByPrice): never shared with another.
	prices *priceLists
}

// numbers is the dense numbering of the values filters compare, from the
// catalogue, which never changes while the process runs.
type numbers struct {
	gpuIdx, cityIdx, regionIdx map[string]uint8
	gpus                       map[string]*catalog.GPUModel
	cityParts                  int
}

var catalogNumbers = sync.OnceValue(func() *numbers {
	n := &numbers{gpuIdx: map[string]uint8{}, cityIdx: map[string]uint8{}, regionIdx: map[string]uint8{}, gpus: map[string]*catalog.GPUModel{}}
	for i, m := range catalog.GPUModels() {
		n.gpuIdx[m.Slug] = uint8(i)
		n.gpus[m.Slug] = &m
	}
	for i, c := range catalog.Cities() {
		n.cityIdx[c.Slug] = uint8(i)
	}
	for i, r := range catalog.Regions() {
		n.regionIdx[r.Slug] = uint8(i)
	}
	n.cityParts = len(n.cityIdx) + 1
	return n
})

func emptySnapshot() *snapshot {
	n := catalogNumbers()
	return &snapshot{numbers: n, parts: make([]*part, len(n.gpuIdx)*n.cityParts), ids: newIDMap(), dcIdx: map[int64]uint16{}, prices: &priceLists{}}
}

// part is one partition: its entries in no order, and for each price view
// and static sort key the entries' slots in that order. The orders are
// slot numbers (4 bytes) rather than copies of the entries, so a
// partition costs one entry and 2 × 6 slots per offer.
type part struct {
	ents []entry
	ord  [nViews][nSorts][]int32
}

// entry is one offer in a partition: its filter key and the offer.
type entry struct {
	k offerKey
	o *Listed
}

// offerKey holds what the filters test, densely numbered.
type offerKey struct {
	id        int64         // the offer's id: the last tie-break of every order
	prices    [nViews]int64 // per GPU-hour in each price view
	vram      uint16
	dc        uint16
	gpu       uint8
	city      uint8
	region    uint8
	ic        uint8
	maxGPUs   uint8
	student   bool
	available bool
	// interruptible: the offer takes bids (the interruptible filter).
	interruptible bool
}

// none numbers a value the snapshot does not know (it never matches).
const none = 255

// staticSorts are the keys whose order does not depend on the query, in
// the order of part.ord.
var staticSorts = []string{SortPrice, SortPricePerTFLOP, SortVRAM, SortMeasured, SortReliability, SortInterruptible}

const nSorts = 6

func sortIndex(key string) (int, bool) {
	i := slices.Index(staticSorts, key)
	return i, i >= 0
}

// idShards splits the offers by id so that a change copies one shard,
// not an index of the whole catalogue.
const idShards = 256

// idMap maps offer ids to offers: per shard, its entries sorted by id,
// 16 bytes an offer where a map took ~38 (at 1M offers, 16 MB instead
// of ~38 MB of live heap); copy-on-write per shard.
type idMap struct{ shards [][]idEntry }

type idEntry struct {
	id int64
	o  *Listed
}

func byID(a, b idEntry) int { return cmp.Compare(a.id, b.id) }

func newIDMap() idMap { return idMap{shards: make([][]idEntry, idShards)} }

func (m idMap) get(id int64) *Listed {
	sh := m.shards[uint64(id)%idShards]
	i, ok := slices.BinarySearchFunc(sh, id, func(e idEntry, id int64) int { return cmp.Compare(e.id, id) })
	if !ok {
		return nil
	}
	return sh[i].o
}

// editShard returns shard with edits applied, sorted by id: an id
// edited to nil is removed, any other is set. shard is left as it is.
func editShard(shard []idEntry, edits map[int64]*Listed) []idEntry {
	adds := make([]idEntry, 0, len(edits))
	for id, o := range edits {
		if o != nil {
			adds = append(adds, idEntry{id, o})
		}
	}
	slices.SortFunc(adds, byID)
	out := make([]idEntry, 0, len(shard)+len(adds))
	i := 0
	for _, e := range shard {
		if _, ok := edits[e.id]; ok {
			continue
		}
		for ; i < len(adds) && adds[i].id < e.id; i++ {
			out = append(out, adds[i])
		}
		out = append(out, e)
	}
	return append(out, adds[i:]...)
}

// apply returns a snapshot at version in which the offers touched are
// replaced by rows (an offer touched without a row has left the list).
// running and judged give the rows' live bids and witness statuses.
func (s *snapshot) apply(version int64, touched []int64, rows []models.OfferRow, running supply.OfferBids, judged map[int64]string) *snapshot {
	ns := *s
	ns.version, ns.prices = version, &priceLists{}
	ns.parts = slices.Clone(s.parts)
	ns.ids = idMap{shards: slices.Clone(s.ids.shards)}
	// edits[shard][id] is the offer an id gets, nil when it leaves.
	edits := map[uint64]map[int64]*Listed{}
	edit := func(id int64, o *Listed) {
		i := uint64(id) % idShards
		if edits[i] == nil {
			edits[i] = map[int64]*Listed{}
		}
		edits[i][id] = o
	}
	type change struct {
		gone map[int64]bool
		adds []entry
	}
	changes := map[int]*change{}
	at := func(p int) *change {
		c := changes[p]
		if c == nil {
			c = &change{gone: map[int64]bool{}}
			changes[p] = c
		}
		return c
	}
	for _, id := range touched {
		old := s.ids.get(id)
		if old == nil {
			continue
		}
		k := s.key(old)
		if c := at(s.partOf(&k)); !c.gone[id] { // touched may name an offer twice
			c.gone[id] = true
			edit(id, nil)
			ns.n--
		}
	}
	dcsCopied := false
	for _, r := range rows {
		if ns.dcChanged(&r) {
			if !dcsCopied {
				ns.dcIdx, ns.lat, dcsCopied = maps.Clone(s.dcIdx), slices.Clone(s.lat), true
			}
			ns.registerDC(&r)
		}
		if e, ok := ns.record(r, running, judged); ok {
			c := at(ns.partOf(&e.k))
			c.adds = append(c.adds, e)
			edit(r.ID, e.o)
			ns.n++
		}
	}
	for p, c := range changes {
		ns.parts[p] = ns.patch(s.parts[p], c.gone, c.adds)
	}
	for i, ed := range edits {
		ns.ids.shards[i] = editShard(s.ids.shards[i], ed)
	}
	return &ns
}

// builder makes a whole snapshot from rows passed in chunks: each chunk
// becomes index records at once (so a load never holds every row and
// every record together), and the partitions are sorted once at the end.
type builder struct {
	s    *snapshot
	adds [][]entry
}

func newBuilder(version int64) *builder {
	s := emptySnapshot()
	s.version = version
	return &builder{s: s, adds: make([][]entry, len(s.parts))}
}

func (b *builder) add(rows []models.OfferRow, running supply.OfferBids, judged map[int64]string) {
	s := b.s
	for _, r := range rows {
		if s.dcChanged(&r) {
			s.registerDC(&r)
		}
		if e, ok := s.record(r, running, judged); ok {
			p := s.partOf(&e.k)
			b.adds[p] = append(b.adds[p], e)
			i := uint64(r.ID) % idShards
			s.ids.shards[i] = append(s.ids.shards[i], idEntry{r.ID, e.o})
			s.n++
		}
	}
}

// record makes r's index record and partition entry; s must number r's
// datacentre already. False for a model the catalogue lacks.
func (s *snapshot) record(r models.OfferRow, running supply.OfferBids, judged map[int64]string) (entry, bool) {
	m, ok := s.gpus[r.GPUModel]
	if !ok {
		slog.Warn("offer with a GPU model missing from the catalogue", "offer", r.ID, "gpu", r.GPUModel)
		return entry{}, false
	}
	o := newListed(&r, m, running[r.ID], judged[r.ID])
	return entry{k: s.key(o), o: o}, true
}

func (b *builder) finish() *snapshot {
	for i, sh := range b.s.ids.shards {
		// Rows come in id order, so the sort is mostly a check; a
		// repeated id keeps its last record, as a map would. The copy
		// holds no spare capacity from the appends.
		slices.SortStableFunc(sh, byID)
		out := sh[:0]
		for j, e := range sh {
			if j+1 < len(sh) && sh[j+1].id == e.id {
				continue
			}
			out = append(out, e)
		}
		b.s.ids.shards[i] = slices.Clone(out)
	}
	for p, ents := range b.adds {
		if len(ents) > 0 {
			part := &part{ents: slices.Clip(ents)}
			part.sortAll()
			b.s.parts[p] = part
		}
	}
	return b.s
}

// partOf is the partition of an offer with key k.
func (n *numbers) partOf(k *offerKey) int {
	c := int(k.city)
	if k.city == none {
		c = n.cityParts - 1
	}
	return int(k.gpu)*n.cityParts + c
}

// dcChanged reports whether r's datacentre is new to the snapshot or its
// published latencies differ from the snapshot's row.
func (s *snapshot) dcChanged(r *models.OfferRow) bool {
	dc, ok := s.dcIdx[r.DatacenterID]
	if !ok {
		return true
	}
	// Compared in place: a full load asks once per offer.
	row, known := s.lat[dc], 0
	for city, ms := range r.Latency {
		if ci, ok := s.cityIdx[city]; ok {
			known++
			if row[ci] != float32(ms) {
				return true
			}
		}
	}
	for _, ms := range row {
		if ms >= 0 {
			known--
		}
	}
	return known != 0
}

func (s *snapshot) latRow(lat map[string]float64) []float32 {
	row := make([]float32, len(s.cityIdx))
	for i := range row {
		row[i] = -1
	}
	for city, ms := range lat {
		if ci, ok := s.cityIdx[city]; ok {
			row[ci] = float32(ms)
		}
	}
	return row
}

// registerDC numbers r's datacentre and sets its latency row, in a
// snapshot whose dcIdx and lat are its own. Every offer of a datacentre
// whose latencies changed is in the same change (the writer logs the
// datacentre), so the row is current for all of them.
func (s *snapshot) registerDC(r *models.OfferRow) {
	dc, ok := s.dcIdx[r.DatacenterID]
	if !ok {
		dc = uint16(len(s.lat))
		s.dcIdx[r.DatacenterID] = dc
		s.lat = append(s.lat, nil)
	}
	s.lat[dc] = s.latRow(r.Latency)
}

// key numbers an offer's filter fields; its datacentre must be registered.
func (s *snapshot) key(o *Listed) offerKey {
	ic := uint8(0)
	switch o.Interconnect() {
	case catalog.InterconnectNVLink:
		ic = 1
	case catalog.InterconnectNVLinkIB:
		ic = 2
	}
	k := offerKey{
		id: o.ID, vram: uint16(min(o.GPU.VRAMGB, 65535)), dc: s.dcIdx[o.DatacenterID()],
		gpu: idx8(s.gpuIdx, o.GPU.Slug), city: idx8(s.cityIdx, o.Datacenter.City), region: idx8(s.regionIdx, o.Datacenter.Region),
		ic: ic, maxGPUs: uint8(min(o.MaxGPUs(), 255)), student: o.StudentDiscountPct() > 0, available: o.AvailableGPUs() > 0,
		interruptible: o.Interruptible != nil,
	}
	for v := range nViews {
		k.prices[v] = o.priceOf(v)
	}
	return k
}

func idx8(m map[string]uint8, k string) uint8 {
	if i, ok := m[k]; ok {
		return i
	}
	return none
}

// patch returns partition old without the offers gone and with adds: a
// few changes are spliced into copies of its orders (linear in its size,
// no sorting); many are sorted afresh.
func (s *snapshot) patch(old *part, gone map[int64]bool, adds []entry) *part {
	var ents []entry
	if old != nil {
		ents = make([]entry, 0, len(old.ents)-len(gone)+len(adds))
	}
	// slot[i] is old slot i's new slot, -1 when it is gone.
	var slot []int32
	if old != nil {
		slot = make([]int32, len(old.ents))
		for i := range old.ents {
			if gone[old.ents[i].k.id] {
				slot[i] = -1
				continue
			}
			slot[i] = int32(len(ents))
			ents = append(ents, old.ents[i])
		}
	}
	first := len(ents)
	ents = append(ents, adds...)
	if len(ents) == 0 {
		return nil
	}
	p := &part{ents: ents}
	if old == nil || len(adds)+len(gone) > len(old.ents)/8+4 {
		p.sortAll()
		return p
	}
	for v := range nViews {
		for ki, key := range staticSorts {
			cmpFn := s.entryComparator(key, &compiled{view: priceView(v)})
			ord := make([]int32, 0, len(ents))
			for _, o := range old.ord[v][ki] {
				if n := slot[o]; n >= 0 {
					ord = append(ord, n)
				}
			}
			for a := first; a < len(ents); a++ {
				i, _ := slices.BinarySearchFunc(ord, int32(a), func(x, t int32) int { return cmpFn(&ents[x], &ents[t]) })
				ord = slices.Insert(ord, i, int32(a))
			}
			p.ord[v][ki] = ord
		}
	}
	return p
}

// sortAll sorts every order of p afresh.
func (p *part) sortAll() {
	var s snapshot // static orders read no snapshot state
	for v := range nViews {
		for ki, key := range staticSorts {
			cmpFn := s.entryComparator(key, &compiled{view: priceView(v)})
			ord := make([]int32, len(p.ents))
			for i := range ord {
				ord[i] = int32(i)
			}
			slices.SortFunc(ord, func(a, b int32) int { return cmpFn(&p.ents[a], &p.ents[b]) })
			p.ord[v][ki] = ord
		}
	}
}

// run is one partition's entries in one order.
type run struct {
	ents []entry
	ord  []int32
}

func (r run) len() int { return len(r.ord) }

func (r run) at(i int) *entry { return &r.ents[r.ord[i]] }
