package providers

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/models/ledger"
	"suanli/models/supply"
	"suanli/rentals"
)

// Service is the provider side of the market: onboarding, datacentres,
// nodes, offers, capacity and earnings. Every method takes the acting user
// and the provider's id and answers ENOTFOUND, exactly as for a missing id,
// when the user is neither a member of the provider's organisation nor a
// platform admin, so other providers' ids reveal nothing.
type Service struct {
	DB *models.DB
	// Rentals is used to stop or drain work on a provider's nodes.
	Rentals *rentals.Service
	// BaseURL is the public address agents are told to connect to.
	BaseURL string
}

// Profile is the onboarding form: who the provider is and where
// bank-transfer payouts go.
type Profile struct {
	CompanyName, ContactName, ContactPhone, ContactEmail, LicenceNo, BankName, BankAccountName, BankAccountNo string
}

// Account is a provider as one user sees it: the provider, its
// organisation (whose Status is the verification status) and the user's
// role, "" for a platform admin looking on.
type Account struct {
	Provider models.Provider
	Org      models.Org
	Role     string
}

// CanWrite reports whether the user may change the provider's settings,
// nodes and offers (owners and admins of its organisation).
func (a *Account) CanWrite() bool {
	return models.RoleRank(a.Role) >= models.RoleRank(models.RoleAdmin)
}

// maxText is the longest free-text field of the provider forms, in characters.
const maxText = 200

// cleanText trims a free-text field and checks it; required says whether
// an empty value is a problem.
func cleanText(errs *apperr.Fields, field, v string, required bool) string {
	v = strings.TrimSpace(v)
	switch {
	case !utf8.ValidString(v) || strings.ContainsAny(v, "\x00\r\n"):
		*errs = append(*errs, apperr.Field(field, "providers.err.text"))
	case v == "" && required:
		*errs = append(*errs, apperr.Field(field, "providers.err.required"))
	case utf8.RuneCountInString(v) > maxText:
		*errs = append(*errs, apperr.Field(field, "providers.err.too_long", maxText))
	}
	return v
}

var (
	phoneRE   = regexp.MustCompile(`^\+?[0-9][0-9 \-]{5,24}$`)
	licenceRE = regexp.MustCompile(`^[0-9A-Za-z\-]{6,32}$`)
	accountRE = regexp.MustCompile(`^[0-9 \-]{8,40}$`)
)

// checkProfile validates and normalises the onboarding form.
func checkProfile(in Profile) (Profile, error) {
	var errs apperr.Fields
	out := Profile{
		CompanyName:     cleanText(&errs, "company_name", in.CompanyName, true),
		ContactName:     cleanText(&errs, "contact_name", in.ContactName, true),
		ContactPhone:    cleanText(&errs, "contact_phone", in.ContactPhone, true),
		ContactEmail:    strings.ToLower(cleanText(&errs, "contact_email", in.ContactEmail, true)),
		LicenceNo:       strings.ToUpper(cleanText(&errs, "licence_no", in.LicenceNo, true)),
		BankName:        cleanText(&errs, "bank_name", in.BankName, false),
		BankAccountName: cleanText(&errs, "bank_account_name", in.BankAccountName, false),
		BankAccountNo:   cleanText(&errs, "bank_account_no", in.BankAccountNo, false),
	}
	has := func(f string) bool {
		for _, e := range errs {
			if e.Field == f {
				return true
			}
		}
		return false
	}
	if !has("contact_phone") && !phoneRE.MatchString(out.ContactPhone) {
		errs = append(errs, apperr.Field("contact_phone", "providers.err.phone"))
	}
	if !has("contact_email") {
		at := strings.LastIndexByte(out.ContactEmail, '@')
		if at < 1 || !strings.Contains(out.ContactEmail[at:], ".") || strings.ContainsAny(out.ContactEmail, " <>,;") {
			errs = append(errs, apperr.Field("contact_email", "providers.err.email"))
		}
	}
	if !has("licence_no") && !licenceRE.MatchString(out.LicenceNo) {
		errs = append(errs, apperr.Field("licence_no", "providers.err.licence"))
	}
	if !has("bank_account_no") && out.BankAccountNo != "" && !accountRE.MatchString(out.BankAccountNo) {
		errs = append(errs, apperr.Field("bank_account_no", "providers.err.bank_account"))
	}
	// Bank details are all or nothing: a half-filled account cannot be paid.
	bank := []string{out.BankName, out.BankAccountName, out.BankAccountNo}
	filled := 0
	for _, b := range bank {
		if b != "" {
			filled++
		}
	}
	if filled > 0 && filled < 3 {
		for i, f := range []string{"bank_name", "bank_account_name", "bank_account_no"} {
			if bank[i] == "" && !has(f) {
				errs = append(errs, apperr.Field(f, "providers.err.bank_incomplete"))
			}
		}
	}
	return out, errs.OrNil()
}

// slugify makes a URL slug from a name, falling back to prefix when the
// name has no ASCII letters or digits (a Chinese name).
func slugify(name, prefix string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = prefix
	}
	return s
}

// uniqueSlug returns base, or base-2, base-3… whichever taken (such as
// supply.ProviderSlugTaken) says is free.
func uniqueSlug(tx *gorm.DB, taken func(tx *gorm.DB, slug string) (bool, error), base string) (string, error) {
	for i := 1; i < 1000; i++ {
		s := base
		if i > 1 {
			s = fmt.Sprintf("%s-%d", base, i)
		}
		used, err := taken(tx, s)
		if err != nil {
			return "", err
		}
		if !used {
			return s, nil
		}
	}
	return "", apperr.Errorf(apperr.ECONFLICT, "no free slug for %q", base)
}

// txWithSlug runs fn, which picks a slug with uniqueSlug and inserts it,
// in a transaction, and again when a concurrent insert took that slug
// first (uniqueSlug cannot see it; the UNIQUE constraint can). Each
// failure means another insert succeeded, so five tries see five
// submissions at once through (a double click is two).
func (p *Service) txWithSlug(ctx context.Context, fn func(tx *gorm.DB) error) error {
	var err error
	for range 5 {
		if err = p.DB.Tx(ctx, fn); err == nil || !ledger.IsUniqueViolation(err) {
			return err
		}
	}
	return err
}

// SignUp creates a provider organisation, pending until a platform admin
// verifies it, with u as its owner, and its provider row. Bad input is an
// apperr.Fields.
func (p *Service) SignUp(ctx context.Context, u *models.User, in Profile) (*Account, error) {
	if u == nil {
		return nil, apperr.Errorf(apperr.EUNAUTHORIZED, "log in first")
	}
	prof, err := checkProfile(in)
	if err != nil {
		return nil, err
	}
	return p.create(ctx, u, prof, models.OrgPending, true, false)
}

// CreateVerified creates an already approved provider owned by u, its
// organisation verification done (so it is paid out): for operators
// onboarding a trusted provider from the command line, and tests.
func (p *Service) CreateVerified(ctx context.Context, u *models.User, company string) (*Account, error) {
	var errs apperr.Fields
	company = cleanText(&errs, "company_name", company, true)
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	return p.create(ctx, u, Profile{CompanyName: company, ContactEmail: u.Email, ContactName: u.Name}, models.OrgApproved, false, false)
}

// CreateSimulated creates an already approved test provider owned by u
// whose nodes run simulated agents (`suanli admin create-user …
// --provider NAME --simulated`): besides the demo's, the only provider
// whose nodes the fleet accepts as simulated, and whose nodes are
// simulated whatever their agents say. Everything they report is
// labelled simulated.
func (p *Service) CreateSimulated(ctx context.Context, u *models.User, company string) (*Account, error) {
	var errs apperr.Fields
	company = cleanText(&errs, "company_name", company, true)
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	return p.create(ctx, u, Profile{CompanyName: company, ContactEmail: u.Email, ContactName: u.Name}, models.OrgApproved, false, true)
}

// create makes the provider organisation; quota counts it against the
// user's organisations per day (accounts.CheckOrgQuota), as signing up
// does; simulated makes a provider whose nodes run simulated agents.
func (p *Service) create(ctx context.Context, u *models.User, prof Profile, status string, quota, simulated bool) (*Account, error) {
	now := p.DB.Now().UTC()
	acc := &Account{Role: models.RoleOwner}
	err := p.txWithSlug(ctx, func(tx *gorm.DB) error {
		if quota {
			if err := accounts.CheckOrgQuota(tx, u.ID, "company_name", now); err != nil {
				return err
			}
		}
		acc.Org = models.Org{Kind: models.OrgProvider, Name: prof.CompanyName, Status: status, CreatedAt: now}
		if status == models.OrgApproved {
			acc.Org.ReviewedAt = &now
		}
		if err := models.InsertOrg(tx, &acc.Org); err != nil {
			return err
		}
		if status == models.OrgApproved {
			// An operator vouched for it (CreateVerified, CreateSimulated):
			// its organisation verification (企业认证) is done too.
			if err := identitystore.MarkOrgVerified(tx, acc.Org.ID, now); err != nil {
				return err
			}
		}
		if err := models.AddMember(tx, &models.Membership{OrgID: acc.Org.ID, UserID: u.ID, Role: models.RoleOwner, CreatedAt: now}); err != nil {
			return err
		}
		slug, err := uniqueSlug(tx, supply.ProviderSlugTaken, slugify(prof.CompanyName, "provider"))
		if err != nil {
			return err
		}
		acc.Provider = models.Provider{Slug: slug, NameZH: prof.CompanyName, NameEN: prof.CompanyName, CreatedAt: now, OrgID: &acc.Org.ID, Simulated: simulated}
		applyProfile(&acc.Provider, prof)
		return supply.InsertProvider(tx, &acc.Provider)
	})
	if err != nil {
		return nil, err
	}
	return acc, nil
}

func applyProfile(pr *models.Provider, in Profile) {
	pr.ContactName, pr.ContactPhone, pr.ContactEmail, pr.LicenceNo = in.ContactName, in.ContactPhone, in.ContactEmail, in.LicenceNo
	pr.BankName, pr.BankAccountName, pr.BankAccountNo = in.BankName, in.BankAccountName, in.BankAccountNo
}

// Mine returns the providers whose organisations u belongs to.
func (p *Service) Mine(ctx context.Context, u *models.User) ([]Account, error) {
	if u == nil {
		return nil, nil
	}
	oms, err := p.DB.OrgsOfUser(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	var out []Account
	for _, om := range oms {
		if om.Org.Kind != models.OrgProvider {
			continue
		}
		pr, err := supply.ProviderByOrg(p.DB.R.WithContext(ctx), om.Org.ID)
		if apperr.Code(err) == apperr.ENOTFOUND {
			continue // an organisation made by hand without a provider row
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Account{Provider: *pr, Org: om.Org, Role: om.Membership.Role})
	}
	return out, nil
}

// Account returns the provider as u sees it: members (any role) and
// platform admins; anyone else gets ENOTFOUND.
func (p *Service) Account(ctx context.Context, u *models.User, providerID int64) (*Account, error) {
	return p.access(ctx, u, providerID, false)
}

// errProviderNotFound is what anyone outside a provider learns about it.
func errProviderNotFound() error { return apperr.NotFound("provider") }

// access checks that u may see (write=false) or change (write=true) the
// provider. Members see; owners and admins change; platform admins only
// see. Demo providers have no organisation and so no portal.
func (p *Service) access(ctx context.Context, u *models.User, providerID int64, write bool) (*Account, error) {
	if u == nil {
		return nil, errProviderNotFound()
	}
	pr, err := supply.ProviderByIDIn(p.DB.R.WithContext(ctx), providerID)
	if apperr.Code(err) == apperr.ENOTFOUND || (err == nil && pr.OrgID == nil) {
		return nil, errProviderNotFound()
	}
	if err != nil {
		return nil, err
	}
	acc := &Account{Provider: *pr}
	m, err := p.DB.MembershipOf(ctx, *pr.OrgID, u.ID)
	switch {
	case err == nil:
		acc.Role = m.Role
	case apperr.Code(err) != apperr.ENOTFOUND:
		return nil, err
	case !u.PlatformAdmin:
		return nil, errProviderNotFound()
	}
	org, err := p.DB.OrgByID(ctx, *pr.OrgID)
	if err != nil {
		return nil, err
	}
	acc.Org = *org
	if write {
		if !acc.CanWrite() {
			return nil, apperr.Errorf(apperr.EFORBIDDEN, "only the provider's owners and admins may change this")
		}
		if org.SuspendedAt != nil || org.Status == models.OrgRejected {
			return nil, apperr.Errorf(apperr.EFORBIDDEN, "this provider is %s; changes are not accepted", providerState(org))
		}
	}
	return acc, nil
}

func providerState(o *models.Org) string {
	if o.SuspendedAt != nil {
		return "suspended"
	}
	return o.Status
}

// UpdateProfile changes the provider's contact, licence and bank details
// (owners and admins). The company name stays the organisation's.
func (p *Service) UpdateProfile(ctx context.Context, u *models.User, providerID int64, in Profile) error {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return err
	}
	prof, err := checkProfile(in)
	if err != nil {
		return err
	}
	return p.DB.Tx(ctx, func(tx *gorm.DB) error {
		pr := acc.Provider
		applyProfile(&pr, prof)
		pr.NameZH, pr.NameEN = prof.CompanyName, prof.CompanyName
		if err := supply.SetProviderProfile(tx, &pr); err != nil {
			return err
		}
		if err := supply.RenameOrg(tx, acc.Org.ID, prof.CompanyName); err != nil {
			return err
		}
		// The offer list shows provider names.
		return models.OffersChanged(tx, models.OfferScope{Providers: []int64{pr.ID}})
	})
}

// DeclaredLatency is a round-trip time the provider enters by hand; it is
// stored marked "provider-declared".
type DeclaredLatency struct {
	FromCity string
	RTTms    float64
}

// LatencyDeclared is the source recorded for latencies a provider entered.
const LatencyDeclared = "provider-declared"

// DatacenterInput is the datacentre form. Storage is "local" or "shared"
// (models.StorageLocal, models.StorageShared): empty is local for a new
// datacentre and unchanged for an existing one.
type DatacenterInput struct {
	NameZH, NameEN, City, DistrictZH, DistrictEN, Tier string
	UplinkGbps                                         int
	Latencies                                          []DeclaredLatency
	Storage                                            string
}

// DatacenterView is a datacentre with its latency table and node count.
type DatacenterView struct {
	models.Datacenter
	Latencies []models.DatacenterLatency
	Nodes     int
	// Shared is true for a datacentre the provider has nodes in but did
	// not create (a colocation site shared by several providers, such as
	// the demo's): it is shown, not edited, and new nodes go into the
	// provider's own datacentres.
	Shared bool
}

// cityRegions maps the catalogue's cities to their market region.
var cityRegions = map[string]string{
	"chengdu": "cn-southwest", "chongqing": "cn-southwest", "xian": "cn-southwest",
	"beijing": "cn-north", "shanghai": "cn-east", "guangzhou": "cn-south", "shenzhen": "cn-south",
	"frankfurt": "eu-central",
}

// DatacenterTiers are the facility tiers a datacentre may declare.
var DatacenterTiers = []string{"Tier II", "Tier III", "Tier IV"}

// findCity accepts a city slug or its name in either language.
func findCity(v string) (catalog.City, bool) {
	v = strings.TrimSpace(v)
	if c, ok := catalog.CityBySlug(strings.ToLower(v)); ok {
		return c, true
	}
	for _, c := range catalog.Cities() {
		if strings.EqualFold(c.NameEN, v) || c.NameZH == v {
			return c, true
		}
	}
	return catalog.City{}, false
}

func checkDatacenter(in DatacenterInput) (DatacenterInput, error) {
	var errs apperr.Fields
	out := DatacenterInput{
		NameZH:     cleanText(&errs, "name", in.NameZH, true),
		NameEN:     cleanText(&errs, "name_en", in.NameEN, false),
		DistrictZH: cleanText(&errs, "district", in.DistrictZH, false),
		DistrictEN: cleanText(&errs, "district_en", in.DistrictEN, false),
		Tier:       strings.TrimSpace(in.Tier),
		UplinkGbps: in.UplinkGbps,
		Storage:    strings.ToLower(strings.TrimSpace(in.Storage)),
	}
	if out.Storage == "" {
		out.Storage = string(models.StorageLocal)
	} else if !models.Storage(out.Storage).Valid() {
		errs = append(errs, apperr.Field("storage", "providers.err.storage"))
	}
	if strings.TrimSpace(in.City) == "" {
		errs = append(errs, apperr.Field("city", "providers.err.required"))
	} else if c, ok := findCity(in.City); !ok {
		slugs := make([]string, 0, 8)
		for _, c := range catalog.Cities() {
			slugs = append(slugs, c.Slug)
		}
		errs = append(errs, apperr.Field("city", "providers.err.city", strings.Join(slugs, ", ")))
	} else {
		out.City = c.Slug
	}
	if out.Tier == "" {
		out.Tier = "Tier III"
	} else {
		ok := false
		for _, t := range DatacenterTiers {
			if strings.EqualFold(strings.ReplaceAll(t, " ", ""), strings.ReplaceAll(out.Tier, " ", "")) {
				out.Tier, ok = t, true
			}
		}
		if !ok {
			errs = append(errs, apperr.Field("tier", "providers.err.tier", strings.Join(DatacenterTiers, ", ")))
		}
	}
	if out.UplinkGbps == 0 {
		out.UplinkGbps = 10
	} else if out.UplinkGbps < 1 || out.UplinkGbps > 10000 {
		errs = append(errs, apperr.Field("uplink_gbps", "providers.err.range", 1, 10000))
	}
	seen := map[string]bool{}
	for _, l := range in.Latencies {
		c, ok := findCity(l.FromCity)
		switch {
		case !ok:
			errs = append(errs, apperr.Field("latency_"+l.FromCity, "providers.err.city", "a known city"))
		case seen[c.Slug]:
			continue
		case l.RTTms <= 0 || l.RTTms > 1000 || l.RTTms != l.RTTms:
			errs = append(errs, apperr.Field("latency_"+c.Slug, "providers.err.rtt"))
		default:
			seen[c.Slug] = true
			out.Latencies = append(out.Latencies, DeclaredLatency{FromCity: c.Slug, RTTms: l.RTTms})
		}
	}
	return out, errs.OrNil()
}

// CreateDatacenter adds a datacentre of the provider (owners and admins).
func (p *Service) CreateDatacenter(ctx context.Context, u *models.User, providerID int64, in DatacenterInput) (*models.Datacenter, error) {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return nil, err
	}
	in, err = checkDatacenter(in)
	if err != nil {
		return nil, err
	}
	now := p.DB.Now().UTC()
	dc := &models.Datacenter{NameZH: in.NameZH, NameEN: in.NameEN, City: in.City, DistrictZH: in.DistrictZH, DistrictEN: in.DistrictEN,
		Region: cityRegions[in.City], Tier: in.Tier, UplinkGbps: in.UplinkGbps, CreatedAt: now, ProviderID: &acc.Provider.ID,
		Storage: models.Storage(in.Storage)}
	if dc.NameEN == "" {
		dc.NameEN = dc.NameZH
	}
	err = p.txWithSlug(ctx, func(tx *gorm.DB) error {
		dc.ID = 0
		base := acc.Provider.Slug + "-" + slugify(dc.NameEN, in.City)
		if dc.Slug, err = uniqueSlug(tx, supply.DatacenterSlugTaken, base); err != nil {
			return err
		}
		if err := supply.InsertDatacenter(tx, dc); err != nil {
			return err
		}
		return replaceDeclaredLatencies(tx, dc.ID, in.Latencies)
	})
	if err != nil {
		return nil, err
	}
	return dc, nil
}

// replaceDeclaredLatencies swaps the provider-declared figures of a
// datacentre for the new ones; measured figures (from agents) stay.
func replaceDeclaredLatencies(tx *gorm.DB, dcID int64, ls []DeclaredLatency) error {
	figures := make([]models.DatacenterLatency, len(ls))
	for i, l := range ls {
		figures[i] = models.DatacenterLatency{FromCity: l.FromCity, RTTms: l.RTTms}
	}
	return supply.ReplaceLatencies(tx, dcID, LatencyDeclared, figures)
}

// UpdateDatacenter changes a datacentre of the provider (owners and admins).
func (p *Service) UpdateDatacenter(ctx context.Context, u *models.User, providerID, dcID int64, in DatacenterInput) error {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return err
	}
	cur, err := supply.DatacenterOf(p.DB.R.WithContext(ctx), acc.Provider.ID, dcID)
	if err != nil {
		return err
	}
	keepStorage := strings.TrimSpace(in.Storage) == ""
	in, err = checkDatacenter(in)
	if err != nil {
		return err
	}
	if keepStorage {
		in.Storage = string(cur.Storage)
	}
	if in.NameEN == "" {
		in.NameEN = in.NameZH
	}
	return p.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := supply.SetDatacenterDetails(tx, &models.Datacenter{ID: dcID, NameZH: in.NameZH, NameEN: in.NameEN, City: in.City,
			DistrictZH: in.DistrictZH, DistrictEN: in.DistrictEN, Region: cityRegions[in.City], Tier: in.Tier, UplinkGbps: in.UplinkGbps,
			Storage: models.Storage(in.Storage)}); err != nil {
			return err
		}
		if err := replaceDeclaredLatencies(tx, dcID, in.Latencies); err != nil {
			return err
		}
		// The offer list shows datacentre names, cities and latencies.
		return models.OffersChanged(tx, models.OfferScope{Datacenters: []int64{dcID}})
	})
}

// Datacenters returns the provider's datacentres, oldest first.
func (p *Service) Datacenters(ctx context.Context, u *models.User, providerID int64) ([]DatacenterView, error) {
	acc, err := p.access(ctx, u, providerID, false)
	if err != nil {
		return nil, err
	}
	dcs, err := supply.DatacentersOfProvider(ctx, p.DB, acc.Provider.ID)
	if err != nil {
		return nil, err
	}
	if len(dcs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(dcs))
	for i, dc := range dcs {
		ids[i] = dc.ID
	}
	lats, err := supply.LatenciesOf(ctx, p.DB, ids)
	if err != nil {
		return nil, err
	}
	counts, err := supply.ProviderNodeCounts(ctx, p.DB, acc.Provider.ID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]DatacenterView, len(dcs))
	at := make(map[int64]*DatacenterView, len(dcs))
	for i, dc := range dcs {
		out[i].Datacenter = dc
		out[i].Shared = dc.ProviderID == nil || *dc.ProviderID != acc.Provider.ID
		at[dc.ID] = &out[i]
	}
	for _, l := range lats {
		at[l.DatacenterID].Latencies = append(at[l.DatacenterID].Latencies, l)
	}
	for dcID, n := range counts {
		at[dcID].Nodes = n
	}
	return out, nil
}

// ProviderOfNode returns the provider id of a node, so that an API call
// naming only the node can be authorised; ENOTFOUND when there is none.
func (p *Service) ProviderOfNode(ctx context.Context, nodeID int64) (int64, error) {
	return supply.NodeProviderID(ctx, p.DB, nodeID)
}

// ProviderOfOffer returns the provider id of an offer; ENOTFOUND when there is none.
func (p *Service) ProviderOfOffer(ctx context.Context, offerID int64) (int64, error) {
	return supply.OfferProviderID(ctx, p.DB, offerID)
}

// ProviderOfDatacenter returns the provider id of a provider's datacentre;
// ENOTFOUND for a missing one or a shared demo one.
func (p *Service) ProviderOfDatacenter(ctx context.Context, dcID int64) (int64, error) {
	return supply.DatacenterProviderID(ctx, p.DB, dcID)
}
