-- ADL Q6a: in events with at least three jets, the transverse momentum of the
-- trijet whose invariant mass is closest to 172.5 GeV (the first such triple
-- in index order on a tie).
WITH scored AS (
  SELECT Jet_pt AS pt, Jet_phi AS phi, triples(nJet) AS t,
         array_transform(triples(nJet), c -> abs(inv_mass(
             Jet_pt[c['i']], Jet_eta[c['i']], Jet_phi[c['i']], Jet_mass[c['i']],
             Jet_pt[c['j']], Jet_eta[c['j']], Jet_phi[c['j']], Jet_mass[c['j']],
             Jet_pt[c['k']], Jet_eta[c['k']], Jet_phi[c['k']], Jet_mass[c['k']]) - 172.5)) AS d,
         Jet_eta AS eta, Jet_mass AS m
  FROM events
  WHERE nJet >= 3
), best AS (
  SELECT *, t[argmin(d)] AS b FROM scored
)
SELECT pt_of_sum(pt[b['i']], eta[b['i']], phi[b['i']], m[b['i']],
                 pt[b['j']], eta[b['j']], phi[b['j']], m[b['j']],
                 pt[b['k']], eta[b['k']], phi[b['k']], m[b['k']]) AS x
FROM best
