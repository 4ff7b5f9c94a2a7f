package query_test

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/govkit/govkit/notify/query"
)

func TestStrings(t *testing.T) {
	tests := []struct {
		name, raw string
		want      []string
	}{
		{"the repeated form gives every value", "additionalServices=a&additionalServices=b", []string{"a", "b"}},
		{"the [] repeated form is accepted", "additionalServices[]=a&additionalServices[]=b", []string{"a", "b"}},
		{"indexed brackets are taken in index order", "additionalServices[1]=b&additionalServices[0]=a", []string{"a", "b"}},
		{"one value is a list of one", "additionalServices=_all", []string{"_all"}},
		{"values are never split on commas", "additionalServices=a,b", []string{"a,b"}},
		{"brackets that are not a JSON list are an ordinary value", "additionalServices=[draft]", []string{"[draft]"}},
		{"an absent parameter is nil", "other=1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.raw)
			got, err := query.Strings(q, "additionalServices")
			if err != nil {
				t.Fatalf("Strings: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStringsRefusesTheJSONListForm(t *testing.T) {
	tests := []struct {
		name, raw string
		want      []string
	}{
		{"a bracketed JSON list in one parameter shows the repeated form", `additionalServices=["a","b"]`,
			[]string{"additionalServices", "JSON list", "additionalServices=a&additionalServices=b"}},
		{"a JSON list behind [] is refused too", `additionalServices[]=["x y"]`, []string{"additionalServices=x+y"}},
		{"an empty JSON list is refused", `additionalServices=[]`, []string{"additionalServices=a&additionalServices=b"}},
		{"a named bracket key is refused", `additionalServices[foo]=x`, []string{"additionalServices[foo]", "repeat"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.raw)
			_, err := query.Strings(q, "additionalServices")
			wantBadRequest(t, err, tc.want...)
		})
	}
}
