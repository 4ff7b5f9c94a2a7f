package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/docplatform/platform"
)

// The demo world `govkit dev` seeds on the first start of a data
// directory, so that a newcomer can sign in and find something to look at:
// one group with alice as ADMIN and bob as MEMBER, a workflow, three
// documents (two with OCR results, so the review queue is not empty) and
// the group's API key, shown once in the start-up output. Every name
// starts with "Demo" and the group's description says where it came from.
//
// It is written through the store and the file store, as the API would
// write it, once: a marker file in the data directory records that the
// demo was seeded, so a second start seeds nothing (even after the demo
// group was deleted) and cannot show the key again.
const (
	DemoGroupName = "Demo: Permit office"
	demoMarker    = "docplatform-demo-seeded"
)

// Demo is what seeding made.
type Demo struct {
	Group     docplatform.Group
	APIKey    string // the full key; exists nowhere else
	Workflow  docplatform.Workflow
	Documents []docplatform.Document
}

type demoDocument struct {
	name, text string
	ocr        map[string]any // nil: no OCR result yet
}

var demoDocuments = []demoDocument{
	{"demo-permit-application-1042.txt",
		"PERMIT APPLICATION 1042\nApplicant: Harbour Cafe Ltd.\nType: Sidewalk patio\nSubmitted: 2026-03-02\nFee paid: 125.00 CAD\n",
		map[string]any{"pages": 1, "fields": map[string]any{
			"applicationNumber": map[string]any{"value": "1042", "confidence": 0.99},
			"applicant":         map[string]any{"value": "Harbour Cafe Ltd.", "confidence": 0.97},
			"permitType":        map[string]any{"value": "Sidewalk patio", "confidence": 0.93},
			"feePaid":           map[string]any{"value": "125.00", "confidence": 0.71},
		}}},
	{"demo-permit-application-1043.txt",
		"PERMIT APPLICATION 1043\nApplicant: J. Singh\nType: Residential deck\nSubmitted: 2026-03-04\nFee paid: 80.00 CAD\n",
		map[string]any{"pages": 1, "fields": map[string]any{
			"applicationNumber": map[string]any{"value": "1043", "confidence": 0.99},
			"applicant":         map[string]any{"value": "J. Singh", "confidence": 0.88},
			"permitType":        map[string]any{"value": "Residential deck", "confidence": 0.95},
			"feePaid":           map[string]any{"value": "80.00", "confidence": 0.96},
		}}},
	{"demo-site-plan-1044.txt",
		"SITE PLAN for application 1044 (scanned; awaiting OCR)\n",
		nil},
}

var demoWorkflowConfig = map[string]any{
	"steps": []any{
		map[string]any{"name": "ocr", "engine": "demo-ocr", "fields": []any{"applicationNumber", "applicant", "permitType", "feePaid"}},
		map[string]any{"name": "review", "when": "any field below confidence 0.85"},
		map[string]any{"name": "file", "target": "permits"},
	},
}

// seedDemo seeds the demo world unless the data directory's marker says it
// was seeded (or refused) before, or the store already has groups: a data
// directory that holds someone's work is not fresh. When it seeds nothing
// it says why.
func seedDemo(ctx context.Context, p *platform.Platform, dataDir string, users []devidp.User) (*Demo, string, error) {
	marker := filepath.Join(dataDir, demoMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil, "seeded at the first start of " + dataDir + ", not again; its API key was shown then", nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	groups, err := p.Store.ListGroups(ctx)
	if err != nil {
		return nil, "", err
	}
	if len(groups) > 0 {
		return nil, "not seeded: the database already had groups", writeMarker(marker, "not seeded: the store already had groups")
	}
	d, err := seedDemoWorld(ctx, p, users)
	if err != nil {
		return nil, "", err
	}
	return d, "", writeMarker(marker, "seeded "+time.Now().UTC().Format(time.RFC3339)+": group "+d.Group.ID)
}

func seedDemoWorld(ctx context.Context, p *platform.Platform, users []devidp.User) (*Demo, error) {
	var err error
	byName := map[string]devidp.User{}
	for _, u := range users {
		byName[u.Username] = u
		if _, err := p.Store.UpsertUser(ctx, docplatform.User{ID: u.Subject, Email: u.Email, Name: u.Name, PreferredUsername: u.Username}); err != nil {
			return nil, fmt.Errorf("demo user %s: %w", u.Username, err)
		}
	}
	alice, bob := byName["alice"], byName["bob"]
	if alice.Subject == "" || bob.Subject == "" {
		return nil, errors.New("demo: the provider has no alice and bob")
	}

	d := &Demo{}
	d.Group, err = p.Store.CreateGroup(ctx, DemoGroupName,
		"Sample data made by govkit dev at the first start of this data directory. Change or delete it freely; it is not made again.", alice.Subject)
	if err != nil {
		return nil, fmt.Errorf("demo group: %w", err)
	}
	if _, err := p.Store.ChangeMembership(ctx, d.Group.ID, alice.Subject, docplatform.RoleAdmin); err != nil {
		return nil, fmt.Errorf("demo membership: %w", err)
	}
	if _, err := p.Store.ChangeMembership(ctx, d.Group.ID, bob.Subject, docplatform.RoleMember); err != nil {
		return nil, fmt.Errorf("demo membership: %w", err)
	}
	key, k, err := p.API.IssueAPIKey(ctx, d.Group.ID, alice.Subject)
	if err != nil {
		return nil, fmt.Errorf("demo API key: %w", err)
	}
	d.APIKey = key
	config, _ := json.Marshal(demoWorkflowConfig)
	d.Workflow, _, err = p.Store.CreateWorkflow(ctx, docplatform.Workflow{GroupID: d.Group.ID, Name: "Demo: permit intake",
		Description: "OCR, then review of uncertain fields, then filing", CreatedBy: alice.Subject}, config)
	if err != nil {
		return nil, fmt.Errorf("demo workflow: %w", err)
	}

	machine := "apikey:" + k.ID // documents and OCR results come from the group's machine client
	for _, dd := range demoDocuments {
		doc, err := storeDocument(ctx, p, d.Group.ID, machine, dd)
		if err != nil {
			return nil, fmt.Errorf("demo document %s: %w", dd.name, err)
		}
		d.Documents = append(d.Documents, doc)
	}
	return d, nil
}

// storeDocument stores one document's bytes and row, as an upload does,
// and its OCR result.
func storeDocument(ctx context.Context, p *platform.Platform, groupID, by string, dd demoDocument) (docplatform.Document, error) {
	up, err := p.Uploads.Receive(ctx, strings.NewReader(dd.text), int64(len(dd.text)))
	if err != nil {
		return docplatform.Document{}, err
	}
	defer up.Abandon()
	doc, err := up.Keep(ctx, docplatform.Document{GroupID: groupID, FileName: dd.name, UploadedBy: by})
	if err != nil {
		return docplatform.Document{}, err
	}
	if dd.ocr == nil {
		return doc, nil
	}
	result, _ := json.Marshal(dd.ocr)
	if _, _, err := p.Store.PutOCRResult(ctx, docplatform.OCRResult{DocumentID: doc.ID, Engine: "demo-ocr", Result: bytes.TrimSpace(result), WrittenBy: by}); err != nil {
		return docplatform.Document{}, err
	}
	doc.HasOCR = true
	return doc, nil
}

func writeMarker(path, text string) error {
	return os.WriteFile(path, []byte(text+"\n"), 0o600)
}
