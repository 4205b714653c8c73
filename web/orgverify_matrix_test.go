package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/routenames"
)

// Organisation verification's routes join the authorisation matrix
// (web/authz_matrix_test.go) before its last, destructive row, and its
// pages are rendered in both languages by TestOrgVerifyPagesInBothLanguages.
func init() {
	last := len(matrix) - 1
	if matrix[last].route != routenames.OrgsMembersRemove {
		panic("orgverify: the matrix's last row is no longer the member's removal")
	}
	matrix = slices.Insert(matrix, last, orgVerifyMatrix...)
	notPages[routenames.OrgVerify] = "rendered in both languages by TestOrgVerifyPagesInBothLanguages (web/orgverify_pages_test.go)"
	notPages[routenames.AdminOrgVerify] = "rendered in both languages by TestOrgVerifyPagesInBothLanguages (web/orgverify_pages_test.go)"
	notPages[routenames.AdminOrgVerifyLicence] = "the business licence file itself (an image or PDF), each read audited"
	notPages[routenames.APIOrgVerify] = "JSON"
}

// matrixOrgVerification stores a submission of org A (or of a new team)
// with the status, and a licence that is not really sealed: only who
// gets past the guard matters here.
func matrixOrgVerification(f *matrixFixture, status identitystore.OrgStatus, ownOrg bool) int64 {
	t := f.a.t
	ctx := context.Background()
	orgID := f.orgA.ID
	if ownOrg {
		u := mustUser(t, f.a.db, "team-"+string(status)+"@matrix.example", "Team "+string(status), false)
		org, err := (&accounts.Service{DB: f.a.db}).CreateOrg(ctx, u, models.OrgTeam, "Matrix team "+string(status))
		if err != nil {
			t.Fatal(err)
		}
		orgID = org.ID
	}
	now := time.Now().UTC()
	v := &identitystore.OrgVerification{OrgID: orgID, Status: status, Source: identitystore.SourceForm, CreditCode: orgVerifyCode,
		OrgName: "Matrix Co", LegalRep: "Li Lei", LicenceType: "png", LicenceBytes: 8, SubmittedAt: now, ConsentAt: &now, ConsentVersion: "test"}
	if err := f.a.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := identitystore.InsertOrgVerification(tx, v); err != nil {
			return err
		}
		return identitystore.InsertOrgLicence(tx, v.ID, "k.00000000.not-a-real-seal")
	}); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// orgVerifyStatus reads a submission's status.
func orgVerifyStatus(t *testing.T, f *matrixFixture, id int64) identitystore.OrgStatus {
	t.Helper()
	v, err := identitystore.OrgVerificationByID(context.Background(), f.a.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return v.Status
}

// orgVerifyIDs are each matrix fixture's submissions, made when their
// rows first run (the matrix runs its rows in order, one at a time).
var orgVerifyIDs = map[*matrixFixture]map[string]int64{}

func orgVerifyID(f *matrixFixture, key string) int64 { return orgVerifyIDs[f][key] }

func orgVerifyParam(key string, status identitystore.OrgStatus, ownOrg bool) func(f *matrixFixture) []any {
	return func(f *matrixFixture) []any {
		if orgVerifyIDs[f] == nil {
			orgVerifyIDs[f] = map[string]int64{}
		}
		id, ok := orgVerifyIDs[f][key]
		if !ok {
			id = matrixOrgVerification(f, status, ownOrg)
			orgVerifyIDs[f][key] = id
		}
		return []any{idParam(id)}
	}
}

var orgVerifyMatrix = []matrixRow{
	// Org A's members see its verification; others are told it does not exist.
	{route: routenames.OrgVerify, params: orgAParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	// Its owners and admins may submit (the form without its licence file
	// is shown again, 422, once past the guard), members may not.
	{route: routenames.OrgVerifySubmit, params: orgAParam, form: url.Values{"credit_code": {orgVerifyCode}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: http.StatusUnprocessableEntity, Platform: 404, Owner: http.StatusUnprocessableEntity}},
	// The same through the API (its body is the page's multipart form;
	// the matrix's urlencoded one lacks the licence: 422 past the guard).
	{route: routenames.APIOrgVerify, params: orgAParam, want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIOrgVerifySubmit, params: orgAParam, form: url.Values{"credit_code": {orgVerifyCode}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: http.StatusUnprocessableEntity, Platform: 404, Owner: http.StatusUnprocessableEntity}},
	{route: routenames.AdminOrgVerify, params: orgVerifyParam("pending", identitystore.OrgPending, false), want: platformPage},
	// The licence: platform admins only (503 here: the matrix's licence
	// is not really sealed, so no key opens it).
	{route: routenames.AdminOrgVerifyLicence, params: orgVerifyParam("pending", identitystore.OrgPending, false),
		want: expect{Anon: 303, Other: 403, Member: 403, Admin: 403, Platform: http.StatusServiceUnavailable, Owner: 403}},
	{route: routenames.AdminOrgVerifyApprove, params: orgVerifyParam("pending", identitystore.OrgPending, false), want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			must(t, orgVerifyStatus(t, f, orgVerifyID(f, "pending")) == identitystore.OrgVerified, "not approved")
		}},
	{route: routenames.AdminOrgVerifyReject, params: orgVerifyParam("to-reject", identitystore.OrgPending, true), form: url.Values{"reason": {"blurred"}}, want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			must(t, orgVerifyStatus(t, f, orgVerifyID(f, "to-reject")) == identitystore.OrgRejected, "not rejected")
		}},
	{route: routenames.AdminOrgVerifyReset, params: orgVerifyParam("to-reset", identitystore.OrgVerified, true), form: url.Values{"reason": {"renamed"}}, want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			must(t, orgVerifyStatus(t, f, orgVerifyID(f, "to-reset")) == identitystore.OrgReset, "not reset")
		}},
}
