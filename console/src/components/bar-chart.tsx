import { useEffect, useRef } from 'preact/hooks';
import { BarController, BarElement, CategoryScale, Chart, LinearScale, Tooltip } from 'chart.js';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip);

export interface Bar {
  label: string;
  value: number;
}

/**
 * A horizontal bar chart (Chart.js). New bars update the chart in place, without animation,
 * so that a refreshing page does not flicker. The canvas is described for screen readers by
 * `description`; the numbers are in the page's tables too.
 */
export function BarChart({ bars, description, color = '#1f5fbf', unit }: { bars: Bar[]; description: string; color?: string; unit: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart<'bar'> | null>(null);

  useEffect(() => {
    chart.current = new Chart(canvas.current!, {
      type: 'bar',
      data: { labels: [], datasets: [{ data: [], backgroundColor: color, borderRadius: 3, maxBarThickness: 22 }] },
      options: {
        indexAxis: 'y',
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: { tooltip: { callbacks: { label: (item) => `${Number(item.raw).toLocaleString()} ${unit}` } } },
        scales: { x: { beginAtZero: true, ticks: { precision: 0 } }, y: { ticks: { autoSkip: false } } },
      },
    });
    return () => chart.current?.destroy();
  }, [color, unit]);

  useEffect(() => {
    const current = chart.current;
    if (!current) return;
    current.data.labels = bars.map((bar) => bar.label);
    current.data.datasets[0]!.data = bars.map((bar) => bar.value);
    current.update('none');
  }, [bars]);

  return (
    <div class="chart-box">
      <canvas ref={canvas} role="img" aria-label={description} />
    </div>
  );
}
