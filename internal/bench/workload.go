package bench

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Workload is YCSB's core workload, configured by YCSB's own property names so that a
// YCSB workload file runs unchanged. The zero value is not useful: start from
// NewWorkload (YCSB's defaults) or NamedWorkload.
type Workload struct {
	Name string // "a".."f", a paper workload, or the file it came from

	RecordCount    int64 // recordcount: records loaded and addressable (default 1000)
	OperationCount int64 // operationcount: operations in the run phase (default 1000)
	InsertStart    int64 // insertstart: first key number this client loads (default 0)
	InsertCount    int64 // insertcount: records this client loads (default recordcount-insertstart)

	FieldCount              int64  // fieldcount (default 10)
	FieldLength             int64  // fieldlength in bytes (default 100)
	FieldLengthDistribution string // fieldlengthdistribution: constant, uniform, zipfian
	ReadAllFields           bool   // readallfields (default true)
	WriteAllFields          bool   // writeallfields (default false)

	ReadProportion            float64 // readproportion (default 0.95)
	UpdateProportion          float64 // updateproportion (default 0.05)
	InsertProportion          float64 // insertproportion
	ScanProportion            float64 // scanproportion
	ReadModifyWriteProportion float64 // readmodifywriteproportion
	// PingProportion is kura's own: round trips that touch no data, for measuring the
	// ceiling of the client and the connections (pingproportion).
	PingProportion float64

	RequestDistribution string  // requestdistribution: uniform, zipfian, latest, hotspot, sequential
	ZipfianConstant     float64 // zipfianconstant: skew of zipfian (default 0.99; the papers also use 0.90)
	HotspotDataFraction float64 // hotspotdatafraction (default 0.2)
	HotspotOpnFraction  float64 // hotspotopnfraction (default 0.8)

	InsertOrder string // insertorder: hashed (default) or ordered
	KeyPrefix   string // keyprefix (default "user")
	ZeroPadding int64  // zeropadding (default 1)
	Table       string // table (default "usertable"), used by CQL targets

	MaxScanLength          int64  // maxscanlength (default 1000)
	ScanLengthDistribution string // scanlengthdistribution: uniform or zipfian
}

// NewWorkload returns YCSB's CoreWorkload defaults.
func NewWorkload() *Workload {
	return &Workload{
		Name:                    "core",
		RecordCount:             1000,
		OperationCount:          1000,
		InsertCount:             -1,
		FieldCount:              10,
		FieldLength:             100,
		FieldLengthDistribution: "constant",
		ReadAllFields:           true,
		ReadProportion:          0.95,
		UpdateProportion:        0.05,
		RequestDistribution:     "uniform",
		ZipfianConstant:         DefaultZipfianConstant,
		HotspotDataFraction:     0.2,
		HotspotOpnFraction:      0.8,
		InsertOrder:             "hashed",
		KeyPrefix:               "user",
		ZeroPadding:             1,
		Table:                   "usertable",
		MaxScanLength:           1000,
		ScanLengthDistribution:  "uniform",
	}
}

// DefaultZipfianConstant is YCSB's zipfian skew.
const DefaultZipfianConstant = 0.99

// namedWorkloads are the papers' four workloads (000 table 1, 003 table 1) and YCSB's
// workloads/workloada..f, as property overrides of the defaults. "ping" is kura's own.
var namedWorkloads = map[string]string{
	"write-only":  "readproportion=0\nupdateproportion=1\nrequestdistribution=zipfian",
	"write-heavy": "readproportion=0.5\nupdateproportion=0.5\nrequestdistribution=zipfian",
	"read-heavy":  "readproportion=0.95\nupdateproportion=0.05\nrequestdistribution=zipfian",
	"read-only":   "readproportion=1\nupdateproportion=0\nrequestdistribution=zipfian",
	"a":           "readproportion=0.5\nupdateproportion=0.5\nrequestdistribution=zipfian",
	"b":           "readproportion=0.95\nupdateproportion=0.05\nrequestdistribution=zipfian",
	"c":           "readproportion=1\nupdateproportion=0\nrequestdistribution=zipfian",
	"d":           "readproportion=0.95\nupdateproportion=0\ninsertproportion=0.05\nrequestdistribution=latest",
	"e": "readproportion=0\nupdateproportion=0\nscanproportion=0.95\ninsertproportion=0.05\n" +
		"requestdistribution=zipfian\nmaxscanlength=100\nscanlengthdistribution=uniform",
	"f":    "readproportion=0.5\nupdateproportion=0\nreadmodifywriteproportion=0.5\nrequestdistribution=zipfian",
	"ping": "readproportion=0\nupdateproportion=0\npingproportion=1",
}

// WorkloadNames lists the named workloads in the order reports show them.
var WorkloadNames = []string{"write-only", "write-heavy", "read-heavy", "read-only",
	"a", "b", "c", "d", "e", "f", "ping"}

// NamedWorkload returns YCSB's defaults with the named workload's settings applied.
func NamedWorkload(name string) (*Workload, error) {
	props, ok := namedWorkloads[name]
	if !ok {
		return nil, fmt.Errorf("bench: unknown workload %q (known: %s)", name, strings.Join(WorkloadNames, ", "))
	}
	w := NewWorkload()
	w.Name = name
	if err := w.ReadProperties(strings.NewReader(props)); err != nil {
		return nil, err
	}
	return w, nil
}

// ReadProperties applies a YCSB property file: key=value lines, '#' or '!' comments.
// Properties that only matter to YCSB's Java client (workload=, db=, exporter=, ...) are
// accepted and ignored.
func (w *Workload) ReadProperties(r io.Reader) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("bench: line %d: %q is not key=value", n, line)
		}
		if err := w.Set(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return fmt.Errorf("bench: line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// ignoredProperties belong to YCSB's Java client or other bindings.
var ignoredProperties = map[string]bool{"workload": true, "db": true, "exporter": true,
	"exportfile": true, "threadcount": true, "measurementtype": true, "dataintegrity": true,
	"status.interval": true, "hdrhistogram.percentiles": true, "histogram.buckets": true}

// Set sets one property by its YCSB name.
func (w *Workload) Set(key, value string) error {
	if ignoredProperties[key] {
		return nil
	}
	if p, ok := w.ints()[key]; ok {
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("%s=%q: want a non-negative integer", key, value)
		}
		*p = v
		return nil
	}
	if p, ok := w.floats()[key]; ok {
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s=%q: want a non-negative number", key, value)
		}
		*p = v
		return nil
	}
	if p, ok := w.bools()[key]; ok {
		v, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("%s=%q: want true or false", key, value)
		}
		*p = v
		return nil
	}
	if p, ok := w.strings()[key]; ok {
		*p = value
		return nil
	}
	return fmt.Errorf("unknown property %q", key)
}

func (w *Workload) ints() map[string]*int64 {
	return map[string]*int64{"recordcount": &w.RecordCount, "operationcount": &w.OperationCount,
		"insertstart": &w.InsertStart, "insertcount": &w.InsertCount, "fieldcount": &w.FieldCount,
		"fieldlength": &w.FieldLength, "zeropadding": &w.ZeroPadding, "maxscanlength": &w.MaxScanLength}
}

func (w *Workload) floats() map[string]*float64 {
	return map[string]*float64{"readproportion": &w.ReadProportion,
		"updateproportion": &w.UpdateProportion, "insertproportion": &w.InsertProportion,
		"scanproportion": &w.ScanProportion, "readmodifywriteproportion": &w.ReadModifyWriteProportion,
		"pingproportion": &w.PingProportion, "zipfianconstant": &w.ZipfianConstant,
		"hotspotdatafraction": &w.HotspotDataFraction, "hotspotopnfraction": &w.HotspotOpnFraction}
}

func (w *Workload) bools() map[string]*bool {
	return map[string]*bool{"readallfields": &w.ReadAllFields, "writeallfields": &w.WriteAllFields}
}

func (w *Workload) strings() map[string]*string {
	return map[string]*string{"fieldlengthdistribution": &w.FieldLengthDistribution,
		"requestdistribution": &w.RequestDistribution, "insertorder": &w.InsertOrder,
		"keyprefix": &w.KeyPrefix, "table": &w.Table, "scanlengthdistribution": &w.ScanLengthDistribution}
}

// Properties returns every setting under its YCSB name, as recorded in results.
func (w *Workload) Properties() map[string]string {
	out := map[string]string{}
	for k, p := range w.ints() {
		out[k] = strconv.FormatInt(*p, 10)
	}
	out["insertcount"] = strconv.FormatInt(w.insertCount(), 10)
	for k, p := range w.floats() {
		out[k] = strconv.FormatFloat(*p, 'g', -1, 64)
	}
	for k, p := range w.bools() {
		out[k] = strconv.FormatBool(*p)
	}
	for k, p := range w.strings() {
		out[k] = *p
	}
	return out
}

// PropertyNames returns the names Properties uses, sorted.
func (w *Workload) PropertyNames() []string {
	return slices.Sorted(maps.Keys(w.Properties()))
}

// insertCount resolves insertcount's default: every record from insertstart on.
func (w *Workload) insertCount() int64 {
	if w.InsertCount < 0 {
		return w.RecordCount - w.InsertStart
	}
	return w.InsertCount
}

// Validate reports settings YCSB would reject or that cannot mean anything.
func (w *Workload) Validate() error {
	switch {
	case w.RecordCount <= 0:
		return fmt.Errorf("bench: recordcount must be positive")
	case w.InsertStart+w.insertCount() > w.RecordCount:
		return fmt.Errorf("bench: insertstart %d + insertcount %d exceeds recordcount %d",
			w.InsertStart, w.insertCount(), w.RecordCount)
	case w.FieldCount <= 0 || w.FieldLength <= 0:
		return fmt.Errorf("bench: fieldcount and fieldlength must be positive")
	case w.ReadProportion+w.UpdateProportion+w.InsertProportion+w.ScanProportion+
		w.ReadModifyWriteProportion+w.PingProportion <= 0:
		return fmt.Errorf("bench: every operation proportion is zero")
	case w.ZipfianConstant <= 0 || w.ZipfianConstant == 1:
		return fmt.Errorf("bench: zipfianconstant must be positive and not 1")
	case w.HotspotDataFraction > 1 || w.HotspotOpnFraction > 1:
		return fmt.Errorf("bench: hotspot fractions must be at most 1")
	case w.MaxScanLength <= 0:
		return fmt.Errorf("bench: maxscanlength must be positive")
	}
	if !slices.Contains([]string{"uniform", "zipfian", "latest", "hotspot", "sequential"}, w.RequestDistribution) {
		return fmt.Errorf("bench: unknown requestdistribution %q", w.RequestDistribution)
	}
	if !slices.Contains([]string{"constant", "uniform", "zipfian"}, w.FieldLengthDistribution) {
		return fmt.Errorf("bench: unknown fieldlengthdistribution %q", w.FieldLengthDistribution)
	}
	if !slices.Contains([]string{"uniform", "zipfian"}, w.ScanLengthDistribution) {
		return fmt.Errorf("bench: unknown scanlengthdistribution %q", w.ScanLengthDistribution)
	}
	if w.InsertOrder != "hashed" && w.InsertOrder != "ordered" {
		return fmt.Errorf("bench: insertorder must be hashed or ordered, not %q", w.InsertOrder)
	}
	return nil
}
