package httpapi_test

import (
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func TestMain(m *testing.M) { apitest.Main(m) }
