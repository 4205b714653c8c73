package offers

import (
	"cmp"
	"slices"
	"sync"
)

// ByPrice returns every listed offer of the loaded snapshot, cheapest
// first at the price the viewer pays (the student price for a student
// viewer; then the lower id), and the offers version the snapshot was
// loaded at: what the launch catalogue lists whole and the version its
// ETag names. The list is the caller's; the offers are shared and never
// change.
func (ix *Index) ByPrice(student bool) (version int64, list []*Listed) {
	s := ix.snap.Load()
	v := viewOf(student)
	// Sorted once per snapshot and view: launches ask for it per request.
	s.prices.once[v].Do(func() {
		ents := make([]*entry, 0, s.n)
		for _, p := range s.parts {
			if p != nil {
				for i := range p.ents {
					ents = append(ents, &p.ents[i])
				}
			}
		}
		slices.SortFunc(ents, func(a, b *entry) int {
			return cmp.Or(cmp.Compare(a.k.prices[v], b.k.prices[v]), cmp.Compare(a.k.id, b.k.id))
		})
		l := make([]*Listed, len(ents))
		for i, e := range ents {
			l[i] = e.o
		}
		s.prices.list[v] = l
	})
	return s.version, slices.Clone(s.prices.list[v])
}

// priceLists caches a snapshot's whole list by price, per view.
type priceLists struct {
	once [nViews]sync.Once
	list [nViews][]*Listed
}

// Version is the offers version of the loaded snapshot: what ByPrice
// would carry now, without building its list.
func (ix *Index) Version() int64 { return ix.snap.Load().version }
