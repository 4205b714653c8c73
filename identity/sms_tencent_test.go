package identity_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"suanli/identity"
)

// The Tencent Cloud sender calls SendSms (2021-01-11) signed with TC3,
// the number in E.164 and the template's parameters the code and its
// minutes; a number Tencent refused is an error naming its code.
func TestTencentSMSSendsTheTemplate(t *testing.T) {
	var got struct {
		action, version, auth string
		body                  map[string]any
	}
	status := "Ok"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.action, got.version, got.auth = r.Header.Get("X-TC-Action"), r.Header.Get("X-TC-Version"), r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		got.body = nil
		_ = json.Unmarshal(b, &got.body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Response":{"SendStatusSet":[{"SerialNo":"1","PhoneNumber":"+8613800138000","Fee":1,"Code":"`+status+
			`","Message":"send success","IsoCode":"CN"}],"RequestId":"req-1"}}`)
	}))
	defer srv.Close()
	s := identity.NewTencentSMS(identity.TencentConfig{SecretID: "AKIDtest", SecretKey: "secret", Region: "ap-guangzhou",
		AppID: "1400000000", Sign: "算力", Template: "123456", Endpoint: strings.TrimPrefix(srv.URL, "http://"), Scheme: "http"})
	m := identity.SMS{Phone: "13800138000", Code: "042917", Minutes: 10, Body: "ignored by templates"}
	if err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if got.action != "SendSms" || got.version != "2021-01-11" || !strings.HasPrefix(got.auth, "TC3-HMAC-SHA256 Credential=AKIDtest/") {
		t.Errorf("headers: %q %q %q", got.action, got.version, got.auth)
	}
	strs := func(v any) []string {
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}
	if !slices.Equal(strs(got.body["PhoneNumberSet"]), []string{"+8613800138000"}) || !slices.Equal(strs(got.body["TemplateParamSet"]), []string{"042917", "10"}) ||
		got.body["SmsSdkAppId"] != "1400000000" || got.body["SignName"] != "算力" || got.body["TemplateId"] != "123456" {
		t.Errorf("body %v", got.body)
	}
	status = "LimitExceeded.PhoneNumberDailyLimit"
	if err := s.Send(context.Background(), m); err == nil || !strings.Contains(err.Error(), "LimitExceeded.PhoneNumberDailyLimit") {
		t.Errorf("a refused number: %v", err)
	}
}

// Tencent's messages may quote the number (an invalid one, a number on a
// blocklist): an error keeps only Tencent's code and request id, for a
// refused number and for a refused request alike.
func TestTencentSMSErrorsKeepNoNumber(t *testing.T) {
	answer := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	defer srv.Close()
	s := identity.NewTencentSMS(identity.TencentConfig{SecretID: "AKIDtest", SecretKey: "secret", Region: "ap-guangzhou",
		AppID: "1400000000", Sign: "算力", Template: "123456", Endpoint: strings.TrimPrefix(srv.URL, "http://"), Scheme: "http"})
	m := identity.SMS{Phone: "13800138000", Code: "042917", Minutes: 10}
	for _, tc := range []struct{ name, answer, code, request string }{
		{"a refused number", `{"Response":{"SendStatusSet":[{"SerialNo":"","PhoneNumber":"+8613800138000","Fee":0,` +
			`"Code":"FailedOperation.PhoneNumberInBlacklist","Message":"+8613800138000 is in the blacklist","IsoCode":"CN"}],"RequestId":"req-2"}}`,
			"FailedOperation.PhoneNumberInBlacklist", "req-2"},
		{"a refused request", `{"Response":{"Error":{"Code":"InvalidParameterValue.IncorrectPhoneNumber",` +
			`"Message":"the number +8613800138000 is not valid"},"RequestId":"req-3"}}`,
			"InvalidParameterValue.IncorrectPhoneNumber", "req-3"},
	} {
		answer = tc.answer
		err := s.Send(context.Background(), m)
		if err == nil || !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), tc.request) {
			t.Errorf("%s: %v, want Tencent's code and request id", tc.name, err)
		} else if strings.Contains(err.Error(), "13800138000") || strings.Contains(err.Error(), "blacklist") || strings.Contains(err.Error(), "not valid") {
			t.Errorf("%s: the error quotes Tencent's message: %v", tc.name, err)
		}
	}
}
