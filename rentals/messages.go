package rentals

import (
	"strconv"
	"time"

	"gorm.io/gorm"

	"suanli/models/supply"
	"suanli/pricing"
)

// What the market writes for people to read (ledger memos, timeline
// details, audit details, reasons) is stored as a message beside its
// English text (see locales.Msg), so that each reader's pages say it in
// their language. The English stays what the API and the CSVs show.

// nodeLabel names a node in a renter's timeline: by its name, or its
// number when it has none.
func nodeLabel(tx *gorm.DB, id int64) string {
	if name := supply.NodeName(tx, id); name != "" {
		return name
	}
	return "#" + strconv.FormatInt(id, 10)
}

// shTime is a time as pages show it (Asia/Shanghai), for message arguments.
func shTime(t time.Time) string { return t.In(pricing.Shanghai).Format("2006-01-02 15:04") }
