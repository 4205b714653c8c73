-- wrk script: every request a different offer search (12 GPU models x 8
-- cities x 5 sort keys x 3 pages), so no single cached page carries the load.
-- Usage: wrk -t1 -c32 -d15s --latency -s scripts/offers-mix.lua http://127.0.0.1:8080
local gpus = {"rtx-3090","rtx-4090","l40s","v100-32g-sxm2","a100-40g-pcie","a100-40g-sxm","a100-80g-sxm","h100-pcie","h100-sxm","h200-sxm","h20","b200"}
local cities = {"chengdu","chongqing","xian","beijing","shanghai","guangzhou","shenzhen","frankfurt"}
local sorts = {"price","price_per_tflop","latency","vram","measured"}
local n = 0
request = function()
  n = n + 1
  local g = gpus[(n % #gpus) + 1]
  local c = cities[(math.floor(n / #gpus) % #cities) + 1]
  local s = sorts[(math.floor(n / (#gpus * #cities)) % #sorts) + 1]
  local p = (math.floor(n / 7) % 3) + 1
  return wrk.format("GET", "/offers?gpu=" .. g .. "&from=" .. c .. "&sort=" .. s .. "&page=" .. p)
end
