package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tcerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	tchttp "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/http"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
)

// TencentSMS sends codes through Tencent Cloud SMS (腾讯云短信, API
// 2021-01-11, SendSms) with the SDK's generic client: a template approved
// in the SMS console with two parameters, {1} the code and {2} its
// minutes, under an approved signature (签名).
type TencentSMS struct {
	client   *common.Client
	appID    string
	sign     string
	template string
}

// TencentConfig is what TencentSMS needs (SUANLI_SMS_TENCENT_*).
type TencentConfig struct {
	SecretID, SecretKey string
	// Region is the API's region (ap-guangzhou, say).
	Region string
	// AppID is the SMS application's SdkAppId; Sign the approved
	// signature's text; Template the approved template's id.
	AppID, Sign, Template string
	// Endpoint and Scheme replace the API's host and https (tests).
	Endpoint, Scheme string
}

// NewTencentSMS returns a sender on Tencent Cloud SMS.
func NewTencentSMS(c TencentConfig) *TencentSMS {
	p := profile.NewClientProfile()
	p.HttpProfile.ReqTimeout = 10
	if c.Endpoint != "" {
		p.HttpProfile.Endpoint = c.Endpoint
	}
	if c.Scheme != "" {
		p.HttpProfile.Scheme = c.Scheme
	}
	// A failed send is answered at once (the user asks again); the SDK
	// retries nothing on its own.
	p.NetworkFailureMaxRetries = 0
	client := common.NewCommonClient(common.NewCredential(c.SecretID, c.SecretKey), c.Region, p)
	return &TencentSMS{client: client, appID: c.AppID, sign: c.Sign, template: c.Template}
}

// Send sends m's code with the template; a number the API refused (its
// SendStatus not Ok) or a refused request is an error naming Tencent's
// code and request id, never its message (which may quote the number).
func (t *TencentSMS) Send(ctx context.Context, m SMS) error {
	req := tchttp.NewCommonRequest("sms", "2021-01-11", "SendSms")
	req.SetContext(ctx)
	if err := req.SetActionParameters(map[string]any{
		"PhoneNumberSet":   []string{"+86" + m.Phone},
		"SmsSdkAppId":      t.appID,
		"SignName":         t.sign,
		"TemplateId":       t.template,
		"TemplateParamSet": []string{m.Code, strconv.Itoa(m.Minutes)},
	}); err != nil {
		return err
	}
	res := tchttp.NewCommonResponse()
	if err := t.client.Send(req, res); err != nil {
		// Tencent's messages may quote the number (an invalid one, say):
		// only its error code and request id are kept.
		var sdkErr *tcerrors.TencentCloudSDKError
		if errors.As(err, &sdkErr) {
			return fmt.Errorf("tencent sms: %s (request %s)", sdkErr.GetCode(), sdkErr.GetRequestId())
		}
		return fmt.Errorf("tencent sms: the request failed (%T)", err)
	}
	var out struct {
		Response struct {
			// Each status's Message is not read: it may quote the number.
			SendStatusSet []struct{ Code string }
			RequestID     string `json:"RequestId"`
		}
	}
	if err := json.Unmarshal(res.GetBody(), &out); err != nil {
		return fmt.Errorf("tencent sms: the answer is not JSON (%T)", err)
	}
	if len(out.Response.SendStatusSet) != 1 {
		return fmt.Errorf("tencent sms: %d statuses for one number (request %s)", len(out.Response.SendStatusSet), out.Response.RequestID)
	}
	if st := out.Response.SendStatusSet[0]; st.Code != "Ok" {
		return fmt.Errorf("tencent sms: %s (request %s)", st.Code, out.Response.RequestID)
	}
	return nil
}
