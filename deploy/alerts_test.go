package deploy_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	dphttpapi "github.com/govkit/govkit/docplatform/httpapi"
	gkmetrics "github.com/govkit/govkit/internal/metrics"
	notifyhttpapi "github.com/govkit/govkit/notify/httpapi"
)

// ruleFile is the rule file format `promtool check rules` reads.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// servedMetrics is every metric name the two services serve, and up.
func servedMetrics() map[string]bool {
	names := append(gkmetrics.Names(dphttpapi.NewMetrics().Registry), notifyhttpapi.MetricNames()...)
	served := map[string]bool{"up": true}
	for _, n := range names {
		served[n] = true
	}
	return served
}

// TestAlertRules checks deploy/prometheus/alerts.yaml as `promtool check
// rules` would (promtool cannot be built with `go install`: the
// Prometheus module has replace directives): the file decodes strictly,
// every group and alert is named once, every expression parses with
// Prometheus's own PromQL parser, every `for` is a Prometheus duration,
// every annotation is a template that parses with Prometheus's template
// functions; and beyond promtool, every metric an expression names is one
// govkit serves, each selector names its job, each alert has a severity,
// a summary and a description, and the alerts the operators asked for are
// there.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	served := servedMetrics()
	funcs := template.FuncMap{}
	for _, name := range []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp", "title", "toUpper", "toLower", "first", "label", "value", "query", "reReplaceAll", "match"} {
		funcs[name] = func(...any) any { return nil }
	}
	groups, alerts := map[string]bool{}, map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || groups[g.Name] {
			t.Errorf("group name %q empty or repeated", g.Name)
		}
		groups[g.Name] = true
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			if r.Alert == "" || r.Record != "" || !model.LabelName(r.Alert).IsValidLegacy() || alerts[r.Alert] {
				t.Errorf("%s: an alert needs a unique valid name and no record", where)
			}
			alerts[r.Alert] = true
			expr, err := parser.ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: expr: %v", where, err)
				continue
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", where, r.For, err)
				}
			}
			for _, sel := range parser.ExtractSelectors(expr) {
				var name, job string
				for _, m := range sel {
					switch m.Name {
					case model.MetricNameLabel:
						name = m.Value
					case "job":
						job = m.Value
					}
				}
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if s, ok := strings.CutSuffix(name, suffix); ok && served[s] {
						base = s
					}
				}
				if !served[base] {
					t.Errorf("%s: metric %q is not one govkit serves", where, name)
				}
				if job != "govkit-docplatform" && job != "govkit-notify" {
					t.Errorf("%s: selector of %s names job %q, not govkit-docplatform or govkit-notify", where, name, job)
				}
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q", where, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a summary and a description", where)
			}
			for k, v := range r.Annotations {
				// Prometheus defines $labels, $value and $externalLabels first.
				text := "{{$labels := .Labels}}{{$value := .Value}}{{$externalLabels := .ExternalLabels}}" + v
				if _, err := template.New(k).Funcs(funcs).Option("missingkey=zero").Parse(text); err != nil {
					t.Errorf("%s: annotation %s: %v", where, k, err)
				}
			}
		}
	}
	for _, want := range []string{
		"GovkitDocplatformDown", "GovkitNotifyDown", "GovkitDocplatformServerErrors", "GovkitNotifyServerErrors",
		"GovkitNotifyBroadcastStuck", "GovkitNotifyQueueGrowing", "GovkitNotifyBounceRate", "GovkitNotifySMTPFailures",
	} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// TestScrapeConfigMatchesTheRules: the example scrape jobs are the job
// names the rules select, and load the rules file.
func TestScrapeConfigMatchesTheRules(t *testing.T) {
	b, err := os.ReadFile("prometheus/scrape.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, s := range c.ScrapeConfigs {
		jobs = append(jobs, s.JobName)
	}
	if !slices.Equal(jobs, []string{"govkit-docplatform", "govkit-notify"}) || !slices.Contains(c.RuleFiles, "alerts.yaml") {
		t.Fatalf("jobs %v, rule files %v", jobs, c.RuleFiles)
	}
}
