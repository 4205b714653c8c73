package offers

// ByPrice returns every listed offer of the loaded snapshot, cheapest
// first at the price the viewer pays (the student price for a student
// viewer; then the lower id), and the offers version the snapshot was
// loaded at: what the launch catalogue lists whole and the version its
// ETag names. The list is the caller's; the offers are shared and never
// change.
func (ix *Index) ByPrice(student bool) (version int64, list []*Listed) {
	s := ix.snap.Load()
	sorted := s.sorted[viewOf(student)][SortPrice][""]
	list = make([]*Listed, len(sorted))
	for i := range sorted {
		list[i] = sorted[i].o
	}
	return s.version, list
}

// Version is the offers version of the loaded snapshot: what ByPrice
// would carry now, without building its list.
func (ix *Index) Version() int64 { return ix.snap.Load().version }
