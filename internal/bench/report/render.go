package report

import (
	"fmt"
	"os"
	"path/filepath"
)

// ReportFile is the name of the Markdown report Render writes.
const ReportFile = "report.md"

// Render is `kura bench report`: it loads the results under paths, draws the comparison
// charts into outDir/opts.ImageDir and each run's charts into a subdirectory of it named
// label-workload-phase, and writes outDir/report.md linking them. opts.ImageDir must be
// relative; empty means outDir itself.
func Render(paths []string, outDir string, opts Options) error {
	results, err := Load(paths...)
	if err != nil {
		return err
	}
	if opts.ImageDir == "" {
		opts.ImageDir = "."
	}
	if filepath.IsAbs(opts.ImageDir) {
		return fmt.Errorf("report: image directory %s must be relative to %s", opts.ImageDir, outDir)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	imageDir := filepath.Join(outDir, filepath.FromSlash(opts.ImageDir))
	if _, err := PlotCompare(results, imageDir); err != nil {
		return err
	}
	results = sorted(results)
	for i, dir := range runDirs(results) {
		if _, err := PlotRun(results[i], filepath.Join(imageDir, dir)); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(outDir, ReportFile))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := WriteMarkdown(f, results, opts); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
